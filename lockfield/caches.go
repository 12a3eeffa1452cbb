package lockfield

import (
	"strings"

	"github.com/cilium/ebpf/btf"
)

// cacheStructs are the dedicated caches whose struct the naming conventions of cacheStruct do not
// find: their KMEM_CACHE or kmem_cache_create calls name them otherwise.
var cacheStructs = map[string]string{
	"signal_cache":        "signal_struct",   // kernel/fork.c
	"sighand_cache":       "sighand_struct",  // kernel/fork.c
	"files_cache":         "files_struct",    // kernel/fork.c
	"fs_cache":            "fs_struct",       // kernel/fork.c
	"filp":                "file",            // fs/file_table.c
	"inode_cache":         "inode",           // fs/inode.c
	"mnt_cache":           "mount",           // fs/namespace.c
	"cred_jar":            "cred",            // kernel/cred.c
	"radix_tree_node":     "xa_node",         // lib/radix-tree.c: radix_tree_node is a macro for xa_node
	"sock_inode_cache":    "socket_alloc",    // net/socket.c
	"proc_inode_cache":    "proc_inode",      // fs/proc/inode.c
	"bdev_cache":          "bdev_inode",      // block/bdev.c
	"nfs_inode_cache":     "nfs_inode",       // fs/nfs/inode.c
	"tracefs_inode_cache": "tracefs_inode",   // fs/tracefs/inode.c
	"eventpoll_epi":       "epitem",          // fs/eventpoll.c
	"eventpoll_pwq":       "eppoll_entry",    // fs/eventpoll.c
	"skbuff_head_cache":   "sk_buff",         // net/core/skbuff.c
	"skbuff_fclone_cache": "sk_buff_fclones", // net/core/skbuff.c
	"blkdev_ioc":          "io_context",      // block/blk-ioc.c
	"TCP":                 "tcp_sock",        // net/ipv4/tcp_ipv4.c (proto.obj_size)
	"TCPv6":               "tcp6_sock",       // net/ipv6/tcp_ipv6.c
	"UDP":                 "udp_sock",        // net/ipv4/udp.c
	"UDPv6":               "udp6_sock",       // net/ipv6/udp.c
	"UNIX":                "unix_sock",       // net/unix/af_unix.c
	"RAW":                 "raw_sock",        // net/ipv4/raw.c
	"names_cache":         "",                // fs/dcache.c: path names, no struct
}

// cacheStruct returns the struct of a dedicated cache's objects, nil when the cache holds none
// BTF knows or the struct is bigger than the cache's objects (then it is not that struct: the
// cache was merged into another, or a convention misled). It tries the exceptions, then the
// kernel's conventions: KMEM_CACHE names a cache after its struct ("task_struct", "dentry",
// "vm_area_struct"), others add "_cache" ("kernfs_node_cache"), and a file system's inodes are
// "<fs>_inode_cache" of struct <fs>_inode_info ("ext4_inode_cache", "shmem_inode_cache"), else of
// struct <fs>_inode ("fuse_inode_cache").
func (f *Finder) cacheStruct(cache string, objectSize uint32) *btf.Struct {
	var names []string
	if name, ok := cacheStructs[cache]; ok {
		if name == "" {
			return nil
		}
		names = append(names, name)
	}
	names = append(names, cache)
	if base, ok := strings.CutSuffix(cache, "_cache"); ok {
		if _, ok := strings.CutSuffix(base, "_inode"); ok {
			names = append(names, base+"_info") // before base: struct ext4_inode is the inode on disk
		}
		names = append(names, base)
	}
	for _, name := range names {
		var s *btf.Struct
		if err := f.spec.TypeByName(name, &s); err != nil {
			continue
		}
		if objectSize != 0 && s.Size > objectSize {
			return nil
		}
		return s
	}
	return nil
}
