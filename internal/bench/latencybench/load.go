package latencybench

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Target is one endpoint the client calls: the upstream directly, or the gateway.
type Target struct {
	Name   string
	URL    string
	Auth   string   // Authorization header value, empty for none
	Keys   *KeyRing // when set, each request takes the next of these instead of Auth
	Plain  []byte   // the non-streamed request body
	Stream []byte   // the streamed request body
	// ServerCPU, when set, reads the CPU time used so far by the process serving the target (one
	// outside this process), so a Run can say what its requests cost there.
	ServerCPU func() (time.Duration, error)
	// StreamEnd is how the last data frame of a streamed answer begins and StreamFrames how many
	// data frames it has, for a surface whose stream is not the chat one (nil and 0: the chat
	// stream's [DONE] and wantFrames).
	StreamEnd    []byte
	StreamFrames int
}

// streamEnd and streamFrames are what a whole streamed answer of t ends with and has.
func (t Target) streamEnd() []byte {
	if t.StreamEnd == nil {
		return doneFrame[:len(doneFrame)-1]
	}
	return t.StreamEnd
}

func (t Target) streamFrames() int {
	if t.StreamFrames == 0 {
		return wantFrames
	}
	return t.StreamFrames
}

// KeyRing hands out Authorization header values round-robin to every worker of every load that
// shares it, so each key takes an equal share of the requests.
type KeyRing struct {
	auth []string
	next atomic.Uint64
}

// NewKeyRing is a ring of the API key secrets.
func NewKeyRing(secrets []string) *KeyRing {
	r := &KeyRing{auth: make([]string, len(secrets))}
	for i, s := range secrets {
		r.auth[i] = "Bearer " + s
	}
	return r
}

// Next is the next key's header value.
func (r *KeyRing) Next() string { return r.auth[(r.next.Add(1)-1)%uint64(len(r.auth))] }

// Taken is how many requests took a key so far.
func (r *KeyRing) Taken() uint64 { return r.next.Load() }

const messages = `"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}],"max_tokens":64,"temperature":0`

// chatBody is a chat request naming its models with chain (`"model":"m"` or `"models":[…]`).
func chatBody(chain string, stream bool) []byte {
	s := `{` + chain + `,` + messages
	if stream {
		s += `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return []byte(s + "}")
}

func modelField(name string) string { return `"model":"` + name + `"` }

// failoverBody is a plain request whose chain is FailModel (always a 500) then Model.
var failoverBody = chatBody(`"models":["`+FailModel+`","`+Model+`"]`, false)

// messagesBody is chatBody's request to Model on the Anthropic Messages surface: the same system
// prompt, user turn and limits.
func messagesBody(stream bool) []byte {
	s := `{"model":"` + Model + `","system":"You are terse.","messages":[{"role":"user","content":"Say hello."}],"max_tokens":64,"temperature":0`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + "}")
}

// responsesBody is chatBody's request to Model on the OpenAI Responses surface.
func responsesBody(stream bool) []byte {
	s := `{"model":"` + Model + `","instructions":"You are terse.","input":[{"role":"user","content":"Say hello."}],"max_output_tokens":64,"temperature":0,"store":false`
	if stream {
		s += `,"stream":true`
	}
	return []byte(s + "}")
}

// The streams the agent surfaces write from the upstream's default stream: Messages has
// message_start, ping, a text block's start, a delta per content chunk and its stop,
// message_delta and message_stop; Responses has response.created and .in_progress, the message
// item's added and content_part.added, a delta per content chunk, output_text.done,
// content_part.done, output_item.done and response.completed.
var (
	messagesStreamEnd     = []byte(`data: {"type":"message_stop"`)
	messagesStreamFrames  = 2 + 1 + DefaultChunks + 1 + 2
	responsesStreamEnd    = []byte(`data: {"type":"response.completed"`)
	responsesStreamFrames = 2 + 2 + DefaultChunks + 3 + 1
)

// Surfaces returns the gateway target gw as a Messages and a Responses target at base (the
// gateway's http://host:port): the same model and keys, each surface's own bodies and stream.
func Surfaces(gw Target, base string) (messages, responses Target) {
	messages, responses = gw, gw
	messages.Name, messages.URL = "gateway messages", base+"/v1/messages"
	messages.Plain, messages.Stream = messagesBody(false), messagesBody(true)
	messages.StreamEnd, messages.StreamFrames = messagesStreamEnd, messagesStreamFrames
	responses.Name, responses.URL = "gateway responses", base+"/v1/responses"
	responses.Plain, responses.Stream = responsesBody(false), responsesBody(true)
	responses.StreamEnd, responses.StreamFrames = responsesStreamEnd, responsesStreamFrames
	return messages, responses
}

// Targets returns the direct and the gateway target of env, sending the same request bodies
// except for the model name.
func (e *Env) Targets() (direct, gw Target) {
	direct = Target{Name: "direct", URL: e.UpstreamURL, Plain: chatBody(modelField(UpstreamModel), false), Stream: chatBody(modelField(UpstreamModel), true)}
	gw = Target{Name: "gateway", URL: e.GatewayURL, Auth: "Bearer " + e.Secret, Plain: chatBody(modelField(Model), false), Stream: chatBody(modelField(Model), true)}
	return direct, gw
}

// NewClient is the benchmark client: keep-alive connections, enough idle ones for every worker,
// no compression; the same for both targets.
func NewClient(conc int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        2 * conc,
		MaxIdleConnsPerHost: 2 * conc,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// caller makes requests of one worker, reusing its buffers.
type caller struct {
	client *http.Client
	br     *bufio.Reader
	read   int64 // bytes of stream read so far
}

// wantFrames is the data frames a default stream carries: role, content, finish, usage, [DONE].
const wantFrames = 1 + DefaultChunks + 1 + 1 + 1

func (c *caller) post(t Target, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if t.Keys != nil {
		req.Header["Authorization"] = []string{t.Keys.Next()}
	} else if t.Auth != "" {
		req.Header["Authorization"] = []string{t.Auth}
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		return nil, fmt.Errorf("%s: status %d: %s", t.Name, resp.StatusCode, msg)
	}
	return resp, nil
}

// plain makes one non-streamed call and returns its latency (the whole body read).
func (c *caller) plain(t Target) (time.Duration, error) {
	start := time.Now()
	resp, err := c.post(t, t.Plain)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), err
}

// stream makes one streamed call and returns the time to the first data frame and the total.
func (c *caller) stream(t Target, body []byte, each func(frame int)) (ttfb, total time.Duration, frames int, err error) {
	start := time.Now()
	resp, err := c.post(t, body)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	if c.br == nil {
		c.br = bufio.NewReaderSize(resp.Body, 32<<10)
	} else {
		c.br.Reset(resp.Body)
	}
	var last []byte
	for {
		line, err := c.br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil {
			return 0, 0, frames, fmt.Errorf("%s: reading stream: %w", t.Name, err)
		}
		c.read += int64(len(line))
		if bytes.HasPrefix(line, []byte("data: ")) {
			if frames == 0 {
				ttfb = time.Since(start)
			}
			frames++
			last = append(last[:0], line...)
			if each != nil {
				each(frames)
			}
		}
	}
	total = time.Since(start)
	if end := t.streamEnd(); !bytes.HasPrefix(last, end) {
		return 0, 0, frames, fmt.Errorf("%s: stream did not end with %s (%d frames, the last %q)", t.Name, bytes.TrimPrefix(end, []byte("data: ")), frames, last)
	}
	return ttfb, total, frames, nil
}

// Run is the outcome of n requests to one target at one concurrency.
type Run struct {
	Latency []time.Duration // whole request; sorted
	TTFB    []time.Duration // streams only; sorted
	Wall    time.Duration
	Bytes   uint64        // heap bytes allocated in this process during the run
	Mallocs uint64        // heap objects allocated in this process during the run
	CPU     time.Duration // user+system CPU time of this process during the run
	GCs     uint32
	// ServerCPU is the CPU time of the target's own process during the run (Target.ServerCPU).
	ServerCPU time.Duration
}

// Merge adds o's samples to r.
func (r *Run) Merge(o Run) {
	r.Latency = append(r.Latency, o.Latency...)
	r.TTFB = append(r.TTFB, o.TTFB...)
	r.Wall += o.Wall
	r.Bytes += o.Bytes
	r.Mallocs += o.Mallocs
	r.CPU += o.CPU
	r.GCs += o.GCs
	r.ServerCPU += o.ServerCPU
	slices.Sort(r.Latency)
	slices.Sort(r.TTFB)
}

// Load sends n requests to t from conc workers, each waiting for its answer before the next.
func Load(client *http.Client, t Target, stream bool, conc, n int) (Run, error) {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
		lat     = make([][]time.Duration, conc)
		ttfb    = make([][]time.Duration, conc)
	)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	server0, err := serverCPU(t)
	if err != nil {
		return Run{}, err
	}
	cpu0 := cpuTime()
	start := time.Now()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &caller{client: client}
			for next.Add(1) <= int64(n) {
				var d, f time.Duration
				var err error
				if stream {
					var frames int
					f, d, frames, err = c.stream(t, t.Stream, nil)
					if err == nil && frames != t.streamFrames() {
						err = fmt.Errorf("%s: %d data frames, want %d", t.Name, frames, t.streamFrames())
					}
					ttfb[w] = append(ttfb[w], f)
				} else {
					d, err = c.plain(t)
				}
				if err != nil {
					mu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					mu.Unlock()
					return
				}
				lat[w] = append(lat[w], d)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	server1, err := serverCPU(t)
	runtime.ReadMemStats(&m1)
	if firstEr != nil {
		return Run{}, firstEr
	}
	if err != nil {
		return Run{}, err
	}
	r := Run{Wall: wall, CPU: cpu, Bytes: m1.TotalAlloc - m0.TotalAlloc, Mallocs: m1.Mallocs - m0.Mallocs, GCs: m1.NumGC - m0.NumGC,
		ServerCPU: server1 - server0}
	for w := range conc {
		r.Latency = append(r.Latency, lat[w]...)
		r.TTFB = append(r.TTFB, ttfb[w]...)
	}
	slices.Sort(r.Latency)
	slices.Sort(r.TTFB)
	return r, nil
}

func serverCPU(t Target) (time.Duration, error) {
	if t.ServerCPU == nil {
		return 0, nil
	}
	return t.ServerCPU()
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted samples, nearest rank.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
