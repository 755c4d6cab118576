//go:build !linux

package latencybench

import "os"

// diskKind cannot tell the file system off Linux.
func diskKind(string) (string, error) { return "unknown file system", nil }

func allocated(fi os.FileInfo) int64 { return fi.Size() }
