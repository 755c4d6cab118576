package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/secureai-gateway/gateway/internal/testkit/childproc"
)

// motoNoAuthCalls is how many calls moto serves before it enforces IAM: the three that make the
// admin user (CreateUser, PutUserPolicy, CreateAccessKey).
const motoNoAuthCalls = 3

// IAMMoto is a moto server that enforces IAM (INITIAL_NO_AUTH_ACTION_COUNT): every call after the
// admin user's creation needs the credentials of a user whose policies allow it. moto evaluates a
// policy's actions for every service, but its Resource elements only where it knows the resource
// (SQS queues); elsewhere it matches them against "*" (see User).
type IAMMoto struct {
	Endpoint string
	Admin    aws.Credentials // allowed everything: for the test's own setup
}

// MotoIAM returns the test binary's IAM-enforcing moto server, starting it (and its admin user)
// on first use. Its state persists across the binary's tests: give resources unique names.
func MotoIAM(t testing.TB) *IAMMoto {
	t.Helper()
	requireMain(t, "MotoIAM")
	shared.iamOnce.Do(func() {
		var p *childproc.Proc
		var endpoint string
		endpoint, p, shared.iamErr = startMoto(".venv/bin/moto_server", func(bin, host, port string) *exec.Cmd {
			cmd := exec.Command(bin, "-H", host, "-p", port)
			cmd.Env = append(os.Environ(), fmt.Sprintf("INITIAL_NO_AUTH_ACTION_COUNT=%d", motoNoAuthCalls))
			return cmd
		})
		shared.mu.Lock()
		shared.iam = p
		shared.mu.Unlock()
		if shared.iamErr != nil {
			return
		}
		m := &IAMMoto{Endpoint: endpoint}
		// Signed with any credentials (moto routes a request by its signature's service): these
		// are the calls moto serves before it enforces anything.
		m.Admin, shared.iamErr = m.user(context.Background(), aws.Credentials{AccessKeyID: "testing", SecretAccessKey: "testing"}, "testenv-admin",
			`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}`)
		shared.iamMoto = m
	})
	if shared.iamErr != nil {
		t.Fatalf("testenv.MotoIAM: %v", shared.iamErr)
	}
	return shared.iamMoto
}

// Config returns an SDK config for the server with creds.
func (m *IAMMoto) Config(creds aws.Credentials) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, ""),
		BaseEndpoint: aws.String(m.Endpoint),
	}
}

// User creates an IAM user whose only policy is the policy document given and returns its
// credentials.
func (m *IAMMoto) User(t testing.TB, name, policy string) aws.Credentials {
	t.Helper()
	creds, err := m.user(context.Background(), m.Admin, name, policy)
	if err != nil {
		t.Fatalf("testenv: IAM user %s: %v", name, err)
	}
	return creds
}

func (m *IAMMoto) user(ctx context.Context, signer aws.Credentials, name, policy string) (aws.Credentials, error) {
	if err := m.call(ctx, signer, url.Values{"Action": {"CreateUser"}, "UserName": {name}}, nil); err != nil {
		return aws.Credentials{}, err
	}
	if err := m.call(ctx, signer, url.Values{"Action": {"PutUserPolicy"}, "UserName": {name},
		"PolicyName": {name}, "PolicyDocument": {policy}}, nil); err != nil {
		return aws.Credentials{}, err
	}
	var out struct {
		Key struct {
			ID     string `xml:"AccessKeyId"`
			Secret string `xml:"SecretAccessKey"`
		} `xml:"CreateAccessKeyResult>AccessKey"`
	}
	if err := m.call(ctx, signer, url.Values{"Action": {"CreateAccessKey"}, "UserName": {name}}, &out); err != nil {
		return aws.Credentials{}, err
	}
	return aws.Credentials{AccessKeyID: out.Key.ID, SecretAccessKey: out.Key.Secret}, nil
}

// call makes one IAM Query API call signed with signer and decodes its XML answer into out. The
// project pins no IAM SDK: the tests make only these three calls.
func (m *IAMMoto) call(ctx context.Context, signer aws.Credentials, form url.Values, out any) error {
	form.Set("Version", "2010-05-08")
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.Endpoint+"/", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(ctx, signer, req, hex.EncodeToString(sum[:]), "iam", "us-east-1", time.Now()); err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("IAM %s: %s: %s", form.Get("Action"), resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return xml.Unmarshal(b, out)
}
