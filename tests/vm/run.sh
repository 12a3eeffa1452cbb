#!/usr/bin/env bash
# Usage: tests/vm/run.sh [SERIES...]
#
# Runs klockstat's collector tests on Debian's own kernels, one QEMU VM per
# kernel series (5.10, 6.1, 6.1-rt and 6.12 by default; name some to run only
# those, e.g. `tests/vm/run.sh 6.12`). Exits non-zero if any kernel fails.
#
# Each VM boots the newest kernel of its series that apt offers (cloud-amd64,
# rt-amd64 for 6.1-rt: PREEMPT_RT),
# under KVM where the host has hardware virtualisation, else under software
# emulation (TCG), with a small initramfs of
# static binaries: busybox, the collector test binary and the contend
# workload. tests/vm/init runs the tests and prints the verdict on the serial
# console, which is saved to tests/vm/.cache/<kernel>.log. Kernels are cached
# in tests/vm/.cache, so re-runs download nothing. docs/testing.md says what
# each kernel skips and how long a guest takes.
#
# The 6.1 cloud guest also saves the capture of TestCaptureForSourceLines,
# which init prints on the console (gzip, base64, between
# KLOCKSTAT-VM-CAPTURE-BEGIN and -END lines), as
# tests/vm/.cache/<kernel>.capture.json; once that guest passes, srcline's
# TestVmlinux resolves every frame of it on the host against the kernel's
# debug image (Debian's linux-image-*-dbg of the guest kernel's version,
# 283 MB as a package, downloaded once: only its vmlinux is kept in the
# cache), checked by llvm-symbolizer. A failure there fails the guest.
#
# Needs root: installs its own apt dependencies (qemu-system-x86,
# busybox-static, cpio, and llvm for the source-line check), adds
# bookworm-backports to the apt sources if a series is found nowhere else, and
# creates /dev/console in the initramfs.
#
# Environment:
#   KLOCKSTAT_VM_TIMEOUT  wall-clock limit per kernel in seconds (default 900;
#                         .ci/run passes 1800)
#   KLOCKSTAT_VM_ACCEL    auto (default), kvm or tcg. auto takes KVM when
#                         /dev/kvm opens and the CPU flags show hardware
#                         virtualisation (vmx or svm), else TCG. A /dev/kvm
#                         without them is a software hypervisor: on the
#                         development machine (a Firecracker guest) it is
#                         kvm-pvm, which boots a stock kernel only by
#                         emulating it instruction by instruction (two minutes
#                         to reach ACPI, then an emulation failure on a VEX
#                         instruction), far slower than TCG.
#   KLOCKSTAT_VM_TCG      single (default) or multi: how QEMU runs the 2 vCPUs
#                         under TCG.
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
#   KLOCKSTAT_VM_PARALLEL guests run at once (default 1). Each runs on one host
#                         thread under TCG single; lines of their output
#                         interleave, each named by its kernel. Two on a
#                         2-CPU host that also runs other work made the
#                         tests that time a workload's minute miss it.
#   KLOCKSTAT_VM_RUN      run only the tests this regular expression names
#                         (go test -run; no spaces), e.g. TestBackends/kprobe;
#                         one that leaves out TestCaptureForSourceLines leaves
#                         the source lines unchecked
#   KLOCKSTAT_VM_SRCLINE  1 (default) checks the source lines of the 6.1
#                         guest's capture, 0 skips the check and the debug
#                         image's download
#   GO                    go command (default: go)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=$here/.cache
timeout_s=${KLOCKSTAT_VM_TIMEOUT:-900}
accel=${KLOCKSTAT_VM_ACCEL:-auto}
tcg=${KLOCKSTAT_VM_TCG:-single}
parallel=${KLOCKSTAT_VM_PARALLEL:-1}
run_tests=${KLOCKSTAT_VM_RUN:-}
check_srcline=${KLOCKSTAT_VM_SRCLINE:-1}
go=${GO:-go}

# Package name patterns of the kernels, by series.
declare -A kernel_pattern=(
	[5.10]='^linux-image-5\.10\.0-[0-9]+-cloud-amd64-unsigned$'
	[6.1]='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$'
	[6.1-rt]='^linux-image-6\.1\.0-[0-9]+-rt-amd64-unsigned$'
	[6.12]='^linux-image-6\.12\.[0-9]+\+[a-z0-9]+-cloud-amd64-unsigned$'
)
# The series whose guest's capture is resolved against its kernel's debug
# image: one is enough to test source lines on a real kernel, and each image
# costs a 283 MB download.
srcline_series=6.1

# Series from another Debian release than the host's come from a private
# apt configuration (its own source list and package lists under the cache),
# so the host's apt never sees that release.
declare -A kernel_suite=(
	[5.10]=bullseye
)

log() { printf 'vm: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

install_deps() {
	if command -v qemu-system-x86_64 >/dev/null && command -v cpio >/dev/null &&
		{ ((!check_srcline)) || command -v llvm-symbolizer >/dev/null; } &&
		dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
		return
	fi
	log "installing qemu-system-x86 busybox-static cpio"
	local pkgs=(qemu-system-x86 busybox-static cpio)
	((check_srcline)) && pkgs+=(llvm) # llvm-symbolizer, TestVmlinux's oracle
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/dev/null; }
}

# apt_for SERIES sets the array apt_opts to the options that make apt-get
# and apt-cache look in the series' own release: none for the host's, a
# private source list and package lists (refreshed once per run) for a
# release named in kernel_suite.
declare -A suite_ready=()
declare -a apt_opts=()
apt_for() {
	apt_opts=()
	local suite=${kernel_suite[$1]:-}
	[[ -n $suite ]] || return 0
	local dir=$cache/apt-$suite
	apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache")
	[[ -z ${suite_ready[$suite]:-} ]] || return 0
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	echo "deb http://deb.debian.org/debian $suite main" >"$dir/sources.list"
	log "$1: refreshing the package lists of Debian $suite"
	apt-get "${apt_opts[@]}" update -q >/dev/null
	suite_ready[$suite]=1
}

# newest_kernel SERIES prints the newest kernel package of the series apt
# can install, or nothing.
newest_kernel() {
	apt-cache "${apt_opts[@]}" search --names-only "${kernel_pattern[$1]}" | awk '{print $1}' | sort -V | tail -n 1
}

# resolve_kernel SERIES prints the newest kernel package of the series,
# refreshing the package lists and then adding bookworm-backports if apt
# knows none.
resolve_kernel() {
	local pkg
	pkg=$(newest_kernel "$1")
	if [[ -z $pkg && -z ${kernel_suite[$1]:-} ]]; then
		log "$1: no kernel in the package lists, running apt-get update"
		apt-get update -q >/dev/null
		pkg=$(newest_kernel "$1")
		if [[ -z $pkg ]] && ! apt-cache policy | grep -q bookworm-backports; then
			log "$1: adding bookworm-backports to the apt sources"
			echo 'deb http://deb.debian.org/debian bookworm-backports main' >/etc/apt/sources.list.d/klockstat-vm-backports.list
			apt-get update -q >/dev/null
			pkg=$(newest_kernel "$1")
		fi
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
	(cd "$tmp" && apt-get "${apt_opts[@]}" download -q "$pkg=$version" >/dev/null)
	dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*' './boot/config-*'
	mkdir -p "$dir"
	mv "$tmp"/boot/vmlinuz-* "$dir/vmlinuz"
	mv "$tmp"/boot/config-* "$dir/config"
	rm -rf "$tmp"
}

# fetch_debug_image PACKAGE VERSION DIR extracts the vmlinux of the kernel
# debug package PACKAGE (linux-image-*-dbg) into DIR/vmlinux, keeping
# nothing else of it. It fails in one line saying how to do without.
fetch_debug_image() {
	local pkg=$1 version=$2 dir=$3 tmp
	tmp=$(mktemp -d "$cache/download.XXXXXX")
	chown _apt "$tmp" 2>/dev/null || true # apt-get download drops root
	if ! (cd "$tmp" && apt-get "${apt_opts[@]}" download -q "$pkg=$version" >/dev/null 2>"$tmp/apt.err"); then
		local why
		why=$(grep -m 1 '^E: ' "$tmp/apt.err" || tail -n 1 "$tmp/apt.err")
		rm -rf "$tmp"
		die "cannot download the debug image $pkg=$version (${why:-apt-get download failed}); KLOCKSTAT_VM_SRCLINE=0 runs without the source-line check"
	fi
	dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards './usr/lib/debug/boot/vmlinux-*' ||
		die "cannot extract the vmlinux of $pkg=$version (kept in $tmp); KLOCKSTAT_VM_SRCLINE=0 runs without the source-line check"
	mkdir -p "$dir"
	mv "$tmp"/usr/lib/debug/boot/vmlinux-* "$dir/vmlinux"
	rm -rf "$tmp"
}

# check_source_lines NAME VMLINUX extracts the capture the guest NAME printed
# on its console and resolves its frames against the guest kernel's debug
# image VMLINUX with srcline's TestVmlinux (CI=true: a missing
# llvm-symbolizer fails rather than skips). It returns non-zero if the test
# fails, or if the guest printed no capture although every test ran.
check_source_lines() {
	local name=$1 vmlinux=$2 serial=$cache/$1.log out=$cache/$1.capture.json start=$SECONDS
	if ! grep -q '^KLOCKSTAT-VM-CAPTURE-BEGIN$' "$serial"; then
		if [[ -n $run_tests ]]; then
			log "$name: no capture on the console (KLOCKSTAT_VM_RUN=$run_tests), source lines not checked"
			return 0
		fi
		log "$name: the guest printed no capture for the source-line check"
		return 1
	fi
	if ! sed -n '/^KLOCKSTAT-VM-CAPTURE-BEGIN$/,/^KLOCKSTAT-VM-CAPTURE-END$/{//!p}' "$serial" | base64 -d | gunzip >"$out"; then
		log "$name: the capture on the console does not decode (base64 of gzip)"
		return 1
	fi
	local status=0
	(cd "$root" && CI=true KLOCKSTAT_VMLINUX=$vmlinux KLOCKSTAT_VMLINUX_CAPTURE=$out \
		"$go" test ./srcline -run '^TestVmlinux$' -count=1 -v) 2>&1 | tee "$cache/$name.srcline.log" |
		sed "s/^/[$name] srcline: /" || status=$?
	log "$name: source lines of the capture checked in $((SECONDS - start))s ($([[ $status == 0 ]] && echo PASS || echo FAIL))"
	return "$status"
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
	
	cp /bin/busybox "$stage/bin/"
	install -m 0755 "$here/init" "$stage/init"
	# The kernel opens it for init's stdio before init can mount devtmpfs.
	mknod -m 0600 "$stage/dev/console" c 5 1
	(cd "$stage" && find . -print0 | cpio --null -o -H newc --owner=0:0 --quiet) >"$out"
}

# pick_accel sets accel to kvm or tcg, resolving auto: KVM needs /dev/kvm
# and a CPU with hardware virtualisation (see KLOCKSTAT_VM_ACCEL).
pick_accel() {
	[[ $accel == auto ]] || return 0
	accel=tcg
	if [[ -r /dev/kvm && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		accel=kvm
	fi
}

# accel_args prints QEMU's accelerator and CPU options.
accel_args() {
	if [[ $accel == kvm ]]; then
		echo "-accel kvm -cpu host"
	else
		echo "-accel tcg,thread=$tcg -cpu max"
	fi
}

# run_kernel NAME VMLINUZ INITRD [PARAM...] boots one VM, with the kernel
# parameters PARAM added to its command line; it prints the guest's test
# output as it comes (all but the capture's lines) and returns non-zero
# unless the tests passed.
run_kernel() {
	local name=$1 vmlinuz=$2 initrd=$3 serial=$cache/$1.log status=0
	local params="${*:4}"
	: >"$serial"
	# The guest gives up half a minute before the host does, so a hung
	# test still ends with go test's goroutine dump rather than a killed VM.
	# shellcheck disable=SC2046 # accel_args prints separate words
	timeout -k 10 "$timeout_s" qemu-system-x86_64 \
		$(accel_args) -smp 2 -m 2048 \
		-nodefaults -display none -serial stdio -no-reboot \
		-kernel "$vmlinuz" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet no_timer_check KLOCKSTAT_TEST_TIMEOUT=$((timeout_s - 30))s${run_tests:+ KLOCKSTAT_TEST_RUN=$run_tests}${params:+ $params}" \
		</dev/null | awk -v serial="$serial" -v prefix="[$name] " '
			function flush_repeats() {
				if (repeats) print prefix "    (last line repeated " repeats " more times)"
				repeats = 0
			}
			{ sub(/\r$/, ""); print > serial; fflush(serial) }
			/^KLOCKSTAT-VM-START/ { tests = 1 }
			/^KLOCKSTAT-VM-CAPTURE-BEGIN$/ { capture = 1 }
			capture { if ($0 == "KLOCKSTAT-VM-CAPTURE-END") capture = 0; next }
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
		series=(5.10 6.1 6.1-rt 6.12)
	fi
	for s in "${series[@]}"; do
		[[ -n ${kernel_pattern[$s]:-} ]] || die "unknown kernel series $s (want one of: ${!kernel_pattern[*]})"
	done
	if ! [[ $timeout_s =~ ^[0-9]+$ ]] || ((timeout_s < 60)); then
		die "KLOCKSTAT_VM_TIMEOUT=$timeout_s: want whole seconds, at least 60"
	fi
	[[ $tcg == single || $tcg == multi ]] || die "KLOCKSTAT_VM_TCG=$tcg: want single or multi"
	[[ $accel == auto || $accel == kvm || $accel == tcg ]] || die "KLOCKSTAT_VM_ACCEL=$accel: want auto, kvm or tcg"
	pick_accel
	[[ $parallel =~ ^[1-9][0-9]*$ ]] || die "KLOCKSTAT_VM_PARALLEL=$parallel: want a whole number of guests, at least 1"
	[[ $check_srcline == 0 || $check_srcline == 1 ]] || die "KLOCKSTAT_VM_SRCLINE=$check_srcline: want 1 (check source lines) or 0"
	((EUID == 0)) || die "needs root (apt-get, mknod)"

	install_deps
	mkdir -p "$cache"

	local -a names pkgs versions debug_images
	for s in "${series[@]}"; do
		local pkg version dir
		apt_for "$s"
		pkg=$(resolve_kernel "$s")
		version=$(apt-cache "${apt_opts[@]}" policy "$pkg" | awk '/Candidate:/ {print $2}')
		dir=$cache/kernels/${pkg}_$version
		if [[ -f $dir/vmlinuz ]]; then
			log "$s: $pkg $version (cached)"
		else
			log "$s: $pkg $version (downloading)"
			fetch_kernel "$pkg" "$version" "$dir"
		fi
		local debug_image=
		if ((check_srcline)) && [[ $s == "$srcline_series" ]]; then
			local debug_pkg=${pkg%-unsigned}-dbg
			debug_image=$cache/kernels/${debug_pkg}_$version/vmlinux
			if [[ -f $debug_image ]]; then
				log "$s: $debug_pkg $version (cached)"
			else
				log "$s: $debug_pkg $version (downloading)"
				local fetch_start=$SECONDS
				fetch_debug_image "$debug_pkg" "$version" "${debug_image%/vmlinux}"
				log "$s: $debug_pkg downloaded and its vmlinux extracted in $((SECONDS - fetch_start))s"
			fi
		fi
		names+=("$(sed -E 's/^linux-image-(.*)-unsigned$/\1/' <<<"$pkg")")
		pkgs+=("$pkg")
		versions+=("$version")
		debug_images+=("$debug_image")
	done

	log "building the initramfs"
	build_initramfs "$cache/initramfs.cpio"

	# Each guest runs its tests on one host thread (TCG single), so as many
	# guests as there are host CPUs run at once; each writes its verdict and
	# time to the cache, and its output lines carry its name.
	local matrix_start=$SECONDS
	for i in "${!names[@]}"; do
		while (($(jobs -rp | wc -l) >= parallel)); do
			wait -n || true
		done
		log "${names[i]}: booting (${versions[i]}, $([[ $accel == kvm ]] && echo KVM || echo "TCG $tcg"))"
		rm -f "$cache/${names[i]}.result"
		(
			start=$SECONDS
			result=FAIL
			rm -f "$cache/${names[i]}.capture.json" "$cache/${names[i]}.srcline.log"
			params=()
			[[ -z ${debug_images[i]} ]] || params=(KLOCKSTAT_TEST_CAPTURE_OUT=/tmp/capture.json)
			if run_kernel "${names[i]}" "$cache/kernels/${pkgs[i]}_${versions[i]}/vmlinuz" "$cache/initramfs.cpio" "${params[@]}" &&
				{ [[ -z ${debug_images[i]} ]] || check_source_lines "${names[i]}" "${debug_images[i]}"; }; then
				result=PASS
			fi
			echo "$result $((SECONDS - start))s" >"$cache/${names[i]}.result"
		) &
	done
	wait

	local failed=0
	printf '\n%-28s %-20s %-6s %-6s %s\n' kernel package-version result time failed
	for i in "${!names[@]}"; do
		local result=FAIL time=?
		[[ -f $cache/${names[i]}.result ]] && read -r result time <"$cache/${names[i]}.result"
		[[ $result == PASS ]] || failed=1
		printf '%-28s %-20s %-6s %-6s %s\n' "${names[i]}" "${versions[i]}" "$result" "$time" \
			"$(cat "$cache/${names[i]}".{log,srcline.log} 2>/dev/null | sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' | paste -sd ' ')"
	done
	printf 'matrix wall time: %ds, %d guests at a time\n' "$((SECONDS - matrix_start))" "$parallel"
	printf 'serial logs: %s/<kernel>.log\n' "$cache"
	return "$failed"
}

main "$@"
