// Package proctest runs the built local server (cmd/gateway) as a real process and does to it
// what only a process can suffer: SIGKILL mid-request, then a restart on the same store; a client
// that sends headers and then stalls on a real socket; a console cookie replayed from elsewhere on
// 127.0.0.1, where cookies do not tell ports apart; and the input bounds a hostile caller meets
// (model names, several answers per request), checked on the process as `make run` serves them.
// It has no non-test code beyond this file.
package proctest
