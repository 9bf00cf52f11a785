# anchorkv - one plain, non-recursive Makefile.
#
#   make            build build/anchorkv (release, jemalloc; CFLAGS, CPPFLAGS
#                   and LDFLAGS honoured, warnings not errors)
#   make run        install what is missing, build, run in the foreground
#   make test       install what is missing, build with -Werror (release and
#                   ASan+UBSan), run the C unit tests, then the integration
#                   tests against the sanitized daemon; ends "N passed, N failed, N skipped"
#   make bench-core ns/op of the core structures (not a test)
#   make bench      load tests against anchorkv, memcached and redis-server
#   make fuzz       libFuzzer targets (FUZZ_SECONDS each)
#   make soak       the sanitized daemon under a mixed load for SOAK_SECONDS
#                   (default 600), then counters and a leak-free exit
#   make clean

CC      ?= cc
PKGS    := libevent libsodium libxxhash libssl libcrypto
# A plain make honours the user's CFLAGS, CPPFLAGS and LDFLAGS and does not
# turn warnings into errors (a newer compiler's new warning must not break a
# user's build); make test, unit, integration and CI build with WERROR.
WERROR  ?=
WARN    := -Wall -Wextra -Wshadow -Wpointer-arith -Wvla -Wmissing-prototypes \
           -Wstrict-prototypes -Wformat=2 $(WERROR)
USER_FLAGS := $(CPPFLAGS) $(CFLAGS)
BASE    := -std=gnu11 -g -pthread -D_GNU_SOURCE -Icore -Iprotocol -Iserver \
           $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

# release: jemalloc, optimised
REL_CFLAGS := $(BASE) $(WARN) -O2 -MMD -MP $(USER_FLAGS)
REL_LIBS   := $(LDFLAGS) $(LIBS) -ljemalloc
# asan: libc malloc so that ASan sees every block, UBSan traps
SAN        := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# and the "debug alloc_fail" command (PROTOCOL.md), never in a release build;
# ak_lock_assert_held() checks every _locked helper's lock (core/lock.h)
ASAN_CFLAGS := $(BASE) $(WARN) -O1 $(SAN) -DAK_MALLOC_LIBC -DAK_FAULT_INJECTION \
               -DAK_LOCK_DEBUG -MMD -MP $(USER_FLAGS)
ASAN_LIBS   := $(LDFLAGS) $(LIBS) $(SAN)

CORE_SRCS   := $(wildcard core/*.c)
PROTO_SRCS  := $(wildcard protocol/*.c)
SERVER_SRCS := $(wildcard server/*.c)
LIB_SRCS    := $(CORE_SRCS) $(PROTO_SRCS)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)

REL_LIB_OBJS  := $(LIB_SRCS:%.c=build/rel/%.o)
ASAN_LIB_OBJS := $(LIB_SRCS:%.c=build/asan/%.o)
REL_SRV_OBJS  := $(SERVER_SRCS:%.c=build/rel/%.o)
ASAN_SRV_OBJS := $(SERVER_SRCS:%.c=build/asan/%.o)
UNIT_BINS     := $(UNIT_SRCS:tests/unit/%.c=build/asan/tests/%)

BUILD_DEPS := libevent-dev libjemalloc-dev libsodium-dev libedit-dev libssl-dev libxxhash-dev pkg-config gcc make
TEST_DEPS  := python3 python3-pytest python3-pymemcache python3-pylibmc php-cli php-memcached sasl2-bin ruby ruby-dalli libcache-memcached-fast-perl libmemcached-tools netcat-openbsd memcached nutcracker logrotate man-db systemd
BENCH_DEPS := memcached redis-server redis-tools gnuplot-nox valgrind netcat-openbsd
FUZZ_DEPS  := clang libclang-rt-14-dev

CONF ?= conf/anchorkv.conf
FUZZ_SECONDS ?= 60
SOAK_SECONDS ?= 600

.PHONY: all run cluster install uninstall test unit integration bench bench-core bench-callgrind fuzz soak clean deps deps-test deps-bench deps-fuzz

all: build/anchorkv build/anchorkv-cli

# Installs what is missing: with apt-get when root, else prints the command.
# The reference servers' packages start a service on their default port
# (11211 is ours): a service this install started is stopped again.
define install_pkgs
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	    for s in memcached redis-server nutcracker; do \
	      case " $$missing " in *" $$s "*) service $$s stop >/dev/null 2>&1 || true;; esac; \
	    done; \
	  else \
	    echo "missing packages; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
endef

deps:
	$(call install_pkgs,$(BUILD_DEPS))
deps-test: deps
	$(call install_pkgs,$(TEST_DEPS))
deps-bench: deps
	$(call install_pkgs,$(BENCH_DEPS))
deps-fuzz: deps
	$(call install_pkgs,$(FUZZ_DEPS))

# Every object depends on build/flags, rewritten only when the flags change,
# so that a plain build followed by make test recompiles with -Werror.
FLAGS_TEXT := $(CC) | $(REL_CFLAGS) | $(ASAN_CFLAGS) | $(LDFLAGS)
build/flags: FORCE
	@mkdir -p build
	@echo '$(FLAGS_TEXT)' | cmp -s - $@ || echo '$(FLAGS_TEXT)' > $@

.PHONY: FORCE
FORCE:

build/rel/%.o: %.c build/flags
	@mkdir -p $(dir $@)
	$(CC) $(REL_CFLAGS) -c $< -o $@

build/asan/%.o: %.c build/flags
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -c $< -o $@

build/anchorkv: $(REL_LIB_OBJS) $(REL_SRV_OBJS)
	$(CC) $(REL_CFLAGS) -o $@ $^ $(REL_LIBS)

build/asan/anchorkv: $(ASAN_LIB_OBJS) $(ASAN_SRV_OBJS)
	$(CC) $(ASAN_CFLAGS) -o $@ $^ $(ASAN_LIBS)

# anchorkv-cli (tools/cli): libedit for the prompt, OpenSSL's MD5 for the
# ketama ring; none of the server's code but core/version.h and
# protocol/base64.c (keys listed in base64)
CLI_SRCS     := $(wildcard tools/cli/*.c)
CLI_PKGS     := libedit libcrypto
CLI_CFLAGS    = $(REL_CFLAGS) $(shell pkg-config --cflags $(CLI_PKGS) 2>/dev/null)
CLI_LIBS      = $(LDFLAGS) $(shell pkg-config --libs $(CLI_PKGS) 2>/dev/null) -lm
build/rel/tools/cli/%.o: tools/cli/%.c build/flags
	@mkdir -p $(dir $@)
	$(CC) $(CLI_CFLAGS) -c $< -o $@
build/anchorkv-cli: $(CLI_SRCS:%.c=build/rel/%.o) build/rel/protocol/base64.o
	$(CC) $(CLI_CFLAGS) -o $@ $^ $(CLI_LIBS)

# A unit test links only the modules it tests (UNIT_DEPS_<test>), or all of
# core/ and protocol/ when it names none.
UNIT_DEPS_test_list       := core/alloc.c
UNIT_DEPS_test_alloc      := core/alloc.c
UNIT_DEPS_test_slab       := core/slab.c core/slab_purge.c core/alloc.c core/lock.c
UNIT_DEPS_test_lock       := core/lock.c
UNIT_DEPS_test_rbtree     := core/rbtree.c core/alloc.c
UNIT_DEPS_test_radix_tree := core/radix_tree.c core/alloc.c
UNIT_DEPS_test_htable     := core/htable.c core/hash.c core/alloc.c
UNIT_DEPS_test_store      := $(CORE_SRCS)
UNIT_DEPS_test_reply      := protocol/reply.c core/item.c core/hash.c core/alloc.c \
                             core/slab.c core/slab_purge.c core/lock.c
UNIT_DEPS_test_conf       := server/conf.c server/settings.c server/cmdline.c \
                             core/alloc.c
UNIT_DEPS_test_auth       := server/auth.c core/alloc.c
UNIT_DEPS_test_base64     := protocol/base64.c
UNIT_DEPS_test_snapshot   := server/snapshot.c $(CORE_SRCS)
UNIT_DEPS_test_evict      := $(CORE_SRCS)

.SECONDARY:
.SECONDEXPANSION:
build/asan/tests/%: build/asan/tests/unit/%.o $$(addprefix build/asan/,$$(subst .c,.o,$$(or $$(UNIT_DEPS_$$*),$$(LIB_SRCS))))
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -o $@ $^ $(ASAN_LIBS)

# test_alloc once more against the release allocator (jemalloc, no
# sanitizer): the jemalloc side of core/alloc.c.
UNIT_BINS += build/asan/tests/test_alloc_jemalloc
build/asan/tests/test_alloc_jemalloc: tests/unit/test_alloc.c build/rel/core/alloc.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) -O2 -o $@ $^ $(REL_LIBS)
UNIT_BINS += build/asan/tests/test_slab_jemalloc
build/asan/tests/test_slab_jemalloc: tests/unit/test_slab.c build/rel/core/slab.o build/rel/core/slab_purge.o build/rel/core/alloc.o build/rel/core/lock.o
	@mkdir -p $(dir $@)
	$(CC) $(BASE) $(WARN) -O2 -o $@ $^ $(REL_LIBS)

# test_store once more under ThreadSanitizer, for the store's locking
# (shards, partitions, their splits and merges under concurrent writers,
# walkers and pagers), with the lock-order checks of AK_LOCK_DEBUG.
TSAN_CFLAGS := $(BASE) $(WARN) -O1 -fsanitize=thread -fno-omit-frame-pointer \
               -DAK_MALLOC_LIBC -DAK_FAULT_INJECTION -DAK_LOCK_DEBUG $(USER_FLAGS)
UNIT_BINS += build/asan/tests/test_store_tsan
build/asan/tests/test_store_tsan: tests/unit/test_store.c $(CORE_SRCS) $(wildcard core/*.h tests/unit/*.h) build/flags
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -o $@ tests/unit/test_store.c $(CORE_SRCS) $(LDFLAGS) $(LIBS)
# and test_slab: the class locks, the idle purge beside threads that
# take and give back blocks.
UNIT_BINS += build/asan/tests/test_slab_tsan
build/asan/tests/test_slab_tsan: tests/unit/test_slab.c core/slab.c core/slab_purge.c core/alloc.c core/lock.c $(wildcard core/*.h tests/unit/*.h) build/flags
	@mkdir -p $(dir $@)
	$(CC) $(TSAN_CFLAGS) -o $@ tests/unit/test_slab.c core/slab.c core/slab_purge.c core/alloc.c core/lock.c $(LDFLAGS) $(LIBS)

# Fuzz targets (tests/fuzz/fuzz_<target>.c): libFuzzer builds with clang
# for `make fuzz`, and the same entry point linked with tests/fuzz/replay.c
# (gcc, ASan+UBSan) as build/asan/tests/test_fuzz_<target>, which replays
# the target's corpus and regression inputs under `make test`.
FUZZ_TARGETS    := proto bin bound conf snapshot
FUZZ_SRCS_proto := $(LIB_SRCS)
FUZZ_SRCS_bin   := $(LIB_SRCS)
FUZZ_SRCS_snapshot := server/snapshot.c $(CORE_SRCS)
FUZZ_SRCS_bound := $(LIB_SRCS)
FUZZ_SRCS_conf  := server/conf.c server/settings.c core/alloc.c
FUZZ_CC         := clang
FUZZ_CFLAGS     := $(BASE) $(WARN) -O1 -DAK_MALLOC_LIBC -DAK_LOCK_DEBUG -fno-omit-frame-pointer \
                   -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_HDRS       := $(wildcard core/*.h protocol/*.h server/*.h tests/fuzz/*.h) tests/unit/growbuf.h
FUZZ_BINS       := $(FUZZ_TARGETS:%=build/fuzz/fuzz_%)
UNIT_BINS       += $(FUZZ_TARGETS:%=build/asan/tests/test_fuzz_%)

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRCS_$$*) $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRCS_$*) $(LIBS)

build/asan/tests/fuzz/replay_%.o: tests/fuzz/replay.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -DFUZZ_TARGET='"$*"' -c $< -o $@

build/asan/tests/test_fuzz_%: build/asan/tests/fuzz/fuzz_%.o build/asan/tests/fuzz/replay_%.o $$(addprefix build/asan/,$$(subst .c,.o,$$(FUZZ_SRCS_$$*)))
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -o $@ $^ $(ASAN_LIBS)

run: deps
	@$(MAKE) --no-print-directory build/anchorkv
	./build/anchorkv -f $(CONF)

# make install [PREFIX=/usr/local] [DESTDIR=] [SYSCONFDIR=] [LOGROTATEDIR=]:
# the daemon and the cli, the config (kept if one is there already), the
# man pages, the systemd unit (its paths filled in) and
# the logrotate file. make uninstall takes them away again, the config
# only if unchanged.
PREFIX       ?= /usr/local
SYSCONFDIR   ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
BINDIR        = $(PREFIX)/bin
CONFDIR       = $(SYSCONFDIR)/anchorkv
MAN1DIR       = $(PREFIX)/share/man/man1
UNITDIR      ?= $(PREFIX)/lib/systemd/system
LOGROTATEDIR ?= /etc/logrotate.d

install: build/anchorkv build/anchorkv-cli
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(CONFDIR) $(DESTDIR)$(MAN1DIR) \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(LOGROTATEDIR)
	install -m 755 build/anchorkv build/anchorkv-cli $(DESTDIR)$(BINDIR)/
	@if [ -e $(DESTDIR)$(CONFDIR)/anchorkv.conf ]; then \
		echo "keeping $(DESTDIR)$(CONFDIR)/anchorkv.conf"; \
	else \
		echo "install -m 644 conf/anchorkv.conf $(DESTDIR)$(CONFDIR)/"; \
		install -m 644 conf/anchorkv.conf $(DESTDIR)$(CONFDIR)/; \
	fi
	install -m 644 docs/man/anchorkv.1 docs/man/anchorkv-cli.1 $(DESTDIR)$(MAN1DIR)/
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@CONFDIR@|$(CONFDIR)|g' \
	    conf/anchorkv.service \
	    > $(DESTDIR)$(UNITDIR)/anchorkv.service
	chmod 644 $(DESTDIR)$(UNITDIR)/anchorkv.service
	install -m 644 conf/anchorkv.logrotate $(DESTDIR)$(LOGROTATEDIR)/anchorkv

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/anchorkv $(DESTDIR)$(BINDIR)/anchorkv-cli \
	      $(DESTDIR)$(MAN1DIR)/anchorkv.1 $(DESTDIR)$(MAN1DIR)/anchorkv-cli.1 \
	      $(DESTDIR)$(UNITDIR)/anchorkv.service $(DESTDIR)$(LOGROTATEDIR)/anchorkv
	@if cmp -s conf/anchorkv.conf $(DESTDIR)$(CONFDIR)/anchorkv.conf; then \
		rm -f $(DESTDIR)$(CONFDIR)/anchorkv.conf; \
		rmdir $(DESTDIR)$(CONFDIR) 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(CONFDIR)/anchorkv.conf ]; then \
		echo "keeping $(DESTDIR)$(CONFDIR)/anchorkv.conf (changed since installed)"; \
	fi

# three instances behind nutcracker (conf/nutcracker.yml), in the foreground
cluster: deps
	$(call install_pkgs,nutcracker)
	@$(MAKE) --no-print-directory build/anchorkv
	sh tools/cluster.sh conf/nutcracker.yml

# the bench programs are built too (not run): a change of the core that
# breaks them fails here, not at the next make bench
test: deps-test
	@$(MAKE) --no-print-directory WERROR=-Werror build/anchorkv build/anchorkv-cli build/asan/anchorkv $(UNIT_BINS) build/bench_core build/akbench build/hitratio
	@sh tests/run-tests.sh

unit: deps-test
	@$(MAKE) --no-print-directory WERROR=-Werror $(UNIT_BINS)
	@sh tests/run-tests.sh unit

integration: deps-test
	@$(MAKE) --no-print-directory WERROR=-Werror build/anchorkv build/anchorkv-cli build/asan/anchorkv
	@sh tests/run-tests.sh integration

build/bench_core: tests/bench/bench_core.c $(REL_LIB_OBJS)
	$(CC) $(REL_CFLAGS) -o $@ $^ $(REL_LIBS)

bench-core: deps build/bench_core
	./build/bench_core

# the load and range client of tests/bench/bench.sh (libc only, no core)
build/akbench: tests/bench/akbench.c
	@mkdir -p build
	$(CC) -std=gnu11 -g -O2 -D_GNU_SOURCE $(WARN) -o $@ $<

# the cache-aside replay client and policy simulators (libc and libm)
build/hitratio: tests/bench/hitratio.c
	@mkdir -p build
	$(CC) -std=gnu11 -g -O2 -D_GNU_SOURCE $(WARN) -o $@ $< -lm

bench: deps-bench
	@$(MAKE) --no-print-directory build/anchorkv build/akbench build/hitratio
	@bash tests/bench/bench.sh

# user instructions a request in steady state, under callgrind (memtier)
bench-callgrind: deps-bench
	@$(MAKE) --no-print-directory build/anchorkv
	@bash tests/bench/callgrind.sh

soak: deps-test
	@$(MAKE) --no-print-directory build/asan/anchorkv
	@SOAK_SECONDS=$(SOAK_SECONDS) sh tests/soak/soak.sh

fuzz: deps-fuzz
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@sh tests/fuzz/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
