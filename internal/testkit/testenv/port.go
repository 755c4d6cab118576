package testenv

import (
	"net"
	"strconv"
)

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago,
// for tools that insist on being told their port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
