/* SPDX-License-Identifier: MIT */
/*
 * version.h - anchorkv's own version, for the daemon's -V and log and for
 * the protocol's "version" answer (proto.h adds the memcached release whose
 * protocol it speaks). A build may set it: -DANCHORKV_VERSION='"x.y.z"'.
 */
#ifndef ANCHORKV_VERSION_H
#define ANCHORKV_VERSION_H

#ifndef ANCHORKV_VERSION
#define ANCHORKV_VERSION	"0.1.0"
#endif

#endif /* ANCHORKV_VERSION_H */
