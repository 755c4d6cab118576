// Package cloudbench measures the cloud path of a chat request: the built openai-chat Lambda
// function running under the Lambda Runtime Interface Emulator against moto, with a delay proxy
// in front of moto that holds every AWS call for an injected delay D and records it (its
// operation, when it arrived and when it was answered). The function's provider is the zero-delay
// fake upstream of latencybench, which records when each attempt arrives and is answered.
//
// From the latency at two delays it derives the slope, the number of sequential AWS round trips
// on a request's path; from the records it derives the calls before the first attempt and after
// the provider answered, their sequential rounds, and the calls per request by operation. It is
// measured, not asserted: cmd/bench -cloud runs it (make bench); it is not part of the tests, but
// its pure helpers (operation parsing, round counting, phase splitting) are tested.
//
// The emulator crashes on two concurrent invokes, so invocations run one at a time, and it buffers
// streamed responses, so a stream's latency is that of its whole body.
package cloudbench
