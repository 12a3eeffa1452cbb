#!/usr/bin/env bash
# Usage: tests/vm/run.sh [SERIES...]
#
# Runs klockstat's collector tests on Debian's own kernels, one QEMU VM per
# kernel series (6.1 and 6.12 by default; name some to run only those, e.g.
# `tests/vm/run.sh 6.12`). Exits non-zero if any kernel fails.
#
# Each VM boots the newest cloud-amd64 kernel of its series that apt offers,
# under software emulation (TCG: no KVM needed), with a small initramfs of
# static binaries: busybox, the collector test binary and the contend
# workload. tests/vm/init runs the tests and prints the verdict on the serial
# console, which is saved to tests/vm/.cache/<kernel>.log. Kernels are cached
# in tests/vm/.cache, so re-runs download nothing.
#
# Needs root: installs its own apt dependencies (qemu-system-x86,
# busybox-static, cpio), adds bookworm-backports to the apt sources if a
# series is found nowhere else, and creates /dev/console in the initramfs.
#
# Environment:
#   KLOCKSTAT_VM_TIMEOUT  wall-clock limit per kernel in seconds (default 900)
#   KLOCKSTAT_VM_TCG      single (default) or multi: how QEMU runs the 2 vCPUs.
#                         multi runs them on two host threads, faster and with
#                         real parallel contention, but its cross-modifying
#                         code is not exact: when the kernel patches code the
#                         other vCPU runs (attaching probes, toggling
#                         tracepoints), that vCPU may still execute the int3
#                         the patching left behind and the guest oopses (seen
#                         on 6.12 at _raw_spin_lock and in
#                         rwsem_down_write_slowpath). single is exact. Probe
#                         cost per event means little under single: a vCPU
#                         switched out inside a BPF program charges it the
#                         other vCPU's time.
#   GO                    go command (default: go)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=$here/.cache
timeout_s=${KLOCKSTAT_VM_TIMEOUT:-900}
tcg=${KLOCKSTAT_VM_TCG:-single}
go=${GO:-go}

# Package name patterns of the kernels, by series.
declare -A kernel_pattern=(
	[6.1]='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$'
	[6.12]='^linux-image-6\.12\.[0-9]+\+[a-z0-9]+-cloud-amd64-unsigned$'
)

log() { printf 'vm: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

install_deps() {
	if command -v qemu-system-x86_64 >/dev/null && command -v cpio >/dev/null &&
		dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
		return
	fi
	log "installing qemu-system-x86 busybox-static cpio"
	local pkgs=(qemu-system-x86 busybox-static cpio)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null; }
}

# newest_kernel SERIES prints the newest kernel package of the series apt
# can install, or nothing.
newest_kernel() {
	apt-cache search --names-only "${kernel_pattern[$1]}" | awk '{print $1}' | sort -V | tail -n 1
}

# resolve_kernel SERIES prints the newest kernel package of the series,
# refreshing the package lists and then adding bookworm-backports if apt
# knows none.
resolve_kernel() {
	local pkg
	pkg=$(newest_kernel "$1")
	if [[ -z $pkg ]]; then
		log "$1: no kernel in the package lists, running apt-get update"
		apt-get update -q >/dev/null
		pkg=$(newest_kernel "$1")
	fi
	if [[ -z $pkg ]] && ! apt-cache policy | grep -q bookworm-backports; then
		log "$1: adding bookworm-backports to the apt sources"
		echo 'deb http://deb.debian.org/debian bookworm-backports main' >/etc/apt/sources.list.d/klockstat-vm-backports.list
		apt-get update -q >/dev/null
		pkg=$(newest_kernel "$1")
	fi
	[[ -n $pkg ]] || die "$1: no kernel package matching ${kernel_pattern[$1]} in the apt sources"
	echo "$pkg"
}

# fetch_kernel PACKAGE VERSION DIR extracts the package's vmlinuz (and
# config, to check what a kernel was built with) into DIR.
fetch_kernel() {
	local pkg=$1 version=$2 dir=$3 tmp
	tmp=$(mktemp -d "$cache/download.XXXXXX")
	chown _apt "$tmp" 2>/dev/null || true # apt-get download drops root
	(cd "$tmp" && apt-get download -q "$pkg=$version" >/dev/null)
	dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*' './boot/config-*'
	mkdir -p "$dir"
	mv "$tmp"/boot/vmlinuz-* "$dir/vmlinuz"
	mv "$tmp"/boot/config-* "$dir/config"
	rm -rf "$tmp"
}

# build_initramfs OUT packs busybox, tests/vm/init and the test binaries,
# built static from the current tree, into the cpio archive OUT.
build_initramfs() {
	local out=$1 stage=$cache/initramfs
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,dev,proc,sys,tmp,klockstat/bin}
	(
		cd "$root"
		CGO_ENABLED=0 "$go" test -c -o "$stage/klockstat/collector.test" ./collector
		CGO_ENABLED=0 "$go" build -o "$stage/klockstat/bin/contend" ./examples/contend
	)
	cp "$root/locks.json" "$stage/klockstat/"
	cp /bin/busybox "$stage/bin/"
	install -m 0755 "$here/init" "$stage/init"
	# The kernel opens it for init's stdio before init can mount devtmpfs.
	mknod -m 0600 "$stage/dev/console" c 5 1
	(cd "$stage" && find . -print0 | cpio --null -o -H newc --owner=0:0 --quiet) >"$out"
}

# run_kernel NAME VMLINUZ INITRD boots one VM; it prints the guest's test
# output as it comes and returns non-zero unless the tests passed.
run_kernel() {
	local name=$1 vmlinuz=$2 initrd=$3 serial=$cache/$1.log status=0
	: >"$serial"
	# The guest gives up half a minute before the host does, so a hung
	# test still ends with go test's goroutine dump rather than a killed VM.
	timeout -k 10 "$timeout_s" qemu-system-x86_64 \
		-accel "tcg,thread=$tcg" -cpu max -smp 2 -m 2048 \
		-nodefaults -display none -serial stdio -no-reboot \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet KLOCKSTAT_TEST_TIMEOUT=$((timeout_s - 30))s" \
		</dev/null | awk -v serial="$serial" -v prefix="[$name] " '
			function flush_repeats() {
				if (repeats) print prefix "    (last line repeated " repeats " more times)"
				repeats = 0
			}
			{ sub(/\r$/, ""); print > serial; fflush(serial) }
			/^KLOCKSTAT-VM-START/ { tests = 1 }
			!tests || /^=== (RUN|PAUSE|CONT)/ { next }
			$0 == last { repeats++; next }
			{ flush_repeats(); last = $0; print prefix $0; fflush() }
			END { flush_repeats() }' ||
		status=$?
	if ((status == 124)); then
		log "$name: timed out after ${timeout_s}s; serial log tail:"
		tail -n 40 "$serial" >&2
		return 1
	fi
	if ! grep -q '^KLOCKSTAT-VM-START' "$serial"; then
		log "$name: the tests never started; serial log tail:"
		tail -n 40 "$serial" >&2
		return 1
	fi
	grep -q '^KLOCKSTAT-VM-RESULT: PASS$' "$serial"
}

main() {
	local series=("$@")
	if ((${#series[@]} == 0)); then
		series=(6.1 6.12)
	fi
	for s in "${series[@]}"; do
		[[ -n ${kernel_pattern[$s]:-} ]] || die "unknown kernel series $s (want one of: ${!kernel_pattern[*]})"
	done
	if ! [[ $timeout_s =~ ^[0-9]+$ ]] || ((timeout_s < 60)); then
		die "KLOCKSTAT_VM_TIMEOUT=$timeout_s: want whole seconds, at least 60"
	fi
	[[ $tcg == single || $tcg == multi ]] || die "KLOCKSTAT_VM_TCG=$tcg: want single or multi"
	((EUID == 0)) || die "needs root (apt-get, mknod)"

	install_deps
	mkdir -p "$cache"

	local -a names pkgs versions
	for s in "${series[@]}"; do
		local pkg version dir
		pkg=$(resolve_kernel "$s")
		version=$(apt-cache policy "$pkg" | awk '/Candidate:/ {print $2}')
		dir=$cache/kernels/${pkg}_$version
		if [[ -f $dir/vmlinuz ]]; then
			log "$s: $pkg $version (cached)"
		else
			log "$s: $pkg $version (downloading)"
			fetch_kernel "$pkg" "$version" "$dir"
		fi
		names+=("$(sed -E 's/^linux-image-(.*)-unsigned$/\1/' <<<"$pkg")")
		pkgs+=("$pkg")
		versions+=("$version")
	done

	log "building the initramfs"
	build_initramfs "$cache/initramfs.cpio"

	local -a results times
	local failed=0
	for i in "${!names[@]}"; do
		log "${names[i]}: booting (${versions[i]}, TCG $tcg)"
		local start=$SECONDS
		if run_kernel "${names[i]}" "$cache/kernels/${pkgs[i]}_${versions[i]}/vmlinuz" "$cache/initramfs.cpio"; then
			results+=(PASS)
		else
			results+=(FAIL)
			failed=1
		fi
		times+=("$((SECONDS - start))s")
	done

	printf '\n%-28s %-20s %-6s %-6s %s\n' kernel package-version result time failed
	for i in "${!names[@]}"; do
		printf '%-28s %-20s %-6s %-6s %s\n' "${names[i]}" "${versions[i]}" "${results[i]}" "${times[i]}" \
			"$(sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' "$cache/${names[i]}.log" | paste -sd ' ')"
	done
	printf 'serial logs: %s/<kernel>.log\n' "$cache"
	return "$failed"
}

main "$@"
