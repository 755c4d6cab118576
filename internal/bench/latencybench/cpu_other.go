//go:build !unix

package latencybench

import "time"

func cpuTime() time.Duration { return 0 }
