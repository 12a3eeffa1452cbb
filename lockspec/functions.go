package lockspec

import "strings"

// KernelFunctions returns the functions of the running kernel a function
// listed in locks.json is probed as: itself, and its "_nested" variant.
// Kernels built with CONFIG_DEBUG_LOCK_ALLOC take lock classes through the
// _nested variants: mutex_lock_nested replaces mutex_lock there, and
// down_read_nested joins down_read, so both are probed where both exist.
// exists says whether the kernel has a function; the result holds only
// functions that exist, the listed name first, and is empty when neither
// does.
func KernelFunctions(name string, exists func(string) bool) []string {
	var found []string
	if exists(name) {
		found = append(found, name)
	}
	if !strings.HasSuffix(name, "_nested") && !strings.Contains(name, ".") && exists(name+"_nested") {
		found = append(found, name+"_nested")
	}
	return found
}
