package latencybench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// What another process costs, read from Linux /proc: the gateway runs as its own process, so
// neither getrusage nor runtime.MemStats of this one can see it.

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which the kernel fixes
// at 100 per second for user space on Linux amd64 and arm64 whatever its internal HZ (reading
// sysconf(_SC_CLK_TCK) would need cgo). A CPU figure is thus exact to 10 ms per read.
const clockTick = 10 * time.Millisecond

// procCPU is the user plus system CPU time the process pid has used, all its threads.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the gateway's CPU time needs Linux /proc: %w", err)
	}
	ticks, err := parseStatCPU(raw)
	return time.Duration(ticks) * clockTick, err
}

// parseStatCPU returns utime+stime, fields 14 and 15 of a /proc/<pid>/stat line, in clock
// ticks. Field 2 is the command name in parentheses, which may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStatCPU(stat []byte) (uint64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	fields := strings.Fields(string(stat[end+1:])) // fields[0] is field 3, the state
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want at least %d", len(fields), stime+1)
	}
	u, err1 := strconv.ParseUint(fields[utime], 10, 64)
	s, err2 := strconv.ParseUint(fields[stime], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return u + s, nil
}

// procStatus reads a memory line of /proc/<pid>/status ("VmHWM:  123456 kB") in bytes.
func procStatus(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the server's memory needs Linux /proc: %w", err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no " + field + " in /proc status")
}
