#!/bin/sh
# Builds perf with its BPF skeletons (BUILD_BPF_SKEL=1), which Debian's
# linux-perf lacks, so that `perf lock contention -b` aggregates in the
# kernel as klockstat does; go run ./bench compares against it. The source
# is Debian's kernel source package at one pinned version, and the binary is
# cached per version: a second run only prints its path.
#
# As root: sh bench/perf-skel/build.sh   (prints the binary's path)
#
# 5 to 10 minutes on 2 CPUs, at nice 19. Set PERF_SKEL_VERSION to
# another version of linux-source-6.1 if Debian no longer serves this one.
set -eu

version=${PERF_SKEL_VERSION:-6.1.192-2}
series=6.1
cache=/var/cache/klockstat/perf-$version
if [ -x "$cache/perf" ]; then
	echo "$cache/perf"
	exit 0
fi

# The least that builds perf with skeletons: clang and llvm compile the BPF
# side, libelf and zlib serve the in-tree libbpf and bpftool, flex and bison
# perf's parsers.
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends --no-upgrade "linux-source-$series=$version" \
	make gcc libc6-dev pkg-config xz-utils flex bison clang llvm libelf-dev zlib1g-dev >&2
installed=$(dpkg-query -W -f '${Version}' "linux-source-$series")
if [ "$installed" != "$version" ]; then
	echo "build.sh: linux-source-$series is $installed, not $version" >&2
	exit 1
fi

work=$(mktemp -d /var/tmp/klockstat-perf-skel.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -xJf "/usr/src/linux-source-$series.tar.xz" -C "$work" --strip-components=1 \
	"linux-source-$series/tools" "linux-source-$series/include" "linux-source-$series/arch" \
	"linux-source-$series/lib" "linux-source-$series/scripts" "linux-source-$series/Makefile" \
	"linux-source-$series/kernel/bpf"

# Optional features off, so that what else the machine has installed does
# not change the binary; perf lock needs none of them.
mkdir "$work/out"
nice -n 19 make -C "$work/tools/perf" -j"$(nproc)" O="$work/out" BUILD_BPF_SKEL=1 \
	NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JEVENTS=1 NO_SLANG=1 NO_GTK2=1 NO_LIBBABELTRACE=1 \
	NO_LIBUNWIND=1 NO_LIBNUMA=1 NO_LIBCRYPTO=1 NO_DWARF=1 NO_LIBAUDIT=1 NO_LIBZSTD=1 \
	NO_LZMA=1 NO_LIBCAP=1 NO_DEMANGLE=1 NO_AUXTRACE=1 >&2

mkdir -p "$cache"
install -m 0755 "$work/out/perf" "$cache/perf.tmp"
mv "$cache/perf.tmp" "$cache/perf"
echo "$cache/perf"
