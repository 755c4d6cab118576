package bedrock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// What the shared fakes need to know of Bedrock: its credentials, its error headers and its
// binary event-stream framing.

const testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

// awsTestEnv gives the default credential chain static keys and keeps it away from real
// configuration files and the instance metadata service.
func awsTestEnv(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": testSecret, "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_PROFILE": "",
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

func newAdapter(t *testing.T, f *providertest.Server) provider.Provider {
	t.Helper()
	awsTestEnv(t)
	p, err := New(provider.Config{Name: "bedrock", Type: "bedrock", BaseURL: f.URL, Region: "us-east-1", Client: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func serveJSON(t *testing.T, name string) http.HandlerFunc {
	return providertest.ServeFixture(t, http.StatusOK, name, "X-Amzn-Requestid", "6a8d5c3e-0d4f-4b36-9b53-3c8f6b7d2f11")
}

// serveError answers as Bedrock does: the exception's name in X-Amzn-ErrorType, its message in
// the JSON body.
func serveError(status int, exception, message string, header ...string) http.HandlerFunc {
	header = append(header, "X-Amzn-Errortype", exception+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	return providertest.ServeJSON(status, []byte(`{"message":"`+message+`"}`), header...)
}

// events reads a fixture of one {"event","payload"} object per line into event-stream messages.
func events(t *testing.T, name string) []eventstream.Message {
	var out []eventstream.Message
	sc := bufio.NewScanner(bytes.NewReader(providertest.Fixture(t, name)))
	for sc.Scan() {
		var ev struct {
			Event   string
			Payload json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, event(ev.Event, ev.Payload))
	}
	return out
}

func event(typ string, payload []byte) eventstream.Message {
	var h eventstream.Headers
	h.Set(":event-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("event"))
	return eventstream.Message{Headers: h, Payload: payload}
}

func exception(typ, message string) eventstream.Message {
	var h eventstream.Headers
	h.Set(":exception-type", eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue("exception"))
	return eventstream.Message{Headers: h, Payload: []byte(`{"message":"` + message + `"}`)}
}

// serveEvents encodes msgs with the SDK's own event-stream encoder and serves them as
// providertest.ServeStream does.
func serveEvents(msgs []eventstream.Message, delay time.Duration, end http.HandlerFunc) http.HandlerFunc {
	enc := eventstream.NewEncoder()
	frames := make([][]byte, len(msgs))
	for i, m := range msgs {
		var b bytes.Buffer
		_ = enc.Encode(&b, m)
		frames[i] = b.Bytes()
	}
	return providertest.ServeStream("application/vnd.amazon.eventstream", frames, delay, end)
}

func wantErr(t *testing.T, err error, reason chain.Reason, status int, code string) *provider.Error {
	t.Helper()
	return providertest.WantErr(t, err, reason, status, code, testSecret)
}
