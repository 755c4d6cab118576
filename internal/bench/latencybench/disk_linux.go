package latencybench

import (
	"fmt"
	"os"
	"syscall"
)

// Magic numbers of statfs(2) f_type for the file systems a data directory is likely on.
var fsNames = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x2FC12FC1: "zfs",
	0x794C7630: "overlayfs",
	0x6969:     "nfs",
	0x01021994: "tmpfs",
	0x858458F6: "ramfs",
}

// diskKind names the file system holding dir and refuses one in memory: the store must pay for
// its writes and fsyncs as a user's store on disk does.
func diskKind(dir string) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", err
	}
	name, ok := fsNames[int64(st.Type)]
	if !ok {
		name = fmt.Sprintf("f_type %#x", st.Type)
	}
	if name == "tmpfs" || name == "ramfs" {
		return name, fmt.Errorf("%s is on %s, in memory; pass -dir with a directory on disk", dir, name)
	}
	return name, nil
}

// allocated is the disk a file occupies (what du counts), less than its size where it is sparse.
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
