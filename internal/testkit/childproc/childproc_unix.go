//go:build unix

package childproc

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the tool in its own group so stop reaches its children
// (moto_server is a Python entry-point script; the RIE starts the bootstrap).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
