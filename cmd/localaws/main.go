// Command localaws prepares a local AWS emulator (a moto server) so a function binary can answer
// the sample events in events/ outside AWS: it creates the DynamoDB tables, the signing keyset and
// the webhook queue named by an --env-vars file (events/env.json), and the fixed sample key the
// events carry, then prints the function's environment — the file's variables with the
// emulator's endpoint — one NAME=value per line. scripts/invoke-local.sh (`make invoke-local`)
// runs it against a moto_server it started and passes that environment to the function. Running it
// again on the same emulator changes nothing.
//
//	localaws -endpoint http://127.0.0.1:5000 -env events/env.json -key sk-7e57…
//
// It talks only to an emulator on this machine (a loopback address, or an address of one of this
// machine's own interfaces such as a Docker bridge's, where `sam local`'s containers reach it), with
// dummy credentials, so it can never write into a real account.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/aws/cloud"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/dynamostore"
)

// webhookQueue is the queue created for the webhook dispatcher when the env file names none.
const webhookQueue = "secureai-local-webhooks"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "localaws:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("localaws", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "the emulator's URL, on a loopback address or one of this machine's (required)")
	envFile := fs.String("env", "events/env.json", "a `sam local invoke --env-vars` file (its Parameters)")
	key := fs.String("key", "", "an API key secret to create (sk- + 64 hex), as the sample events send it")
	region := fs.String("region", "us-east-1", "the region the emulator serves")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := onThisMachine(*endpoint); err != nil {
		return err
	}
	params, err := readParams(*envFile)
	if err != nil {
		return err
	}
	params["AWS_ENDPOINT_URL"] = *endpoint
	c, err := cloud.ParseConfig(func(name string) string { return params[name] })
	if err != nil {
		return fmt.Errorf("%s: %w", *envFile, err)
	}

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cfg := aws.Config{Region: *region, BaseEndpoint: aws.String(*endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	db := dynamodb.NewFromConfig(cfg)
	if err := dynamostore.CreateTables(ctx, db, c.Tables); err != nil {
		return err
	}
	if *key != "" {
		if err := createKey(ctx, dynamostore.New(db, c.Tables), *key); err != nil {
			return err
		}
	}
	if c.SigningSecretARN != "" {
		if err := ensureKeyset(ctx, awssecrets.SigningKeys{API: secretsmanager.NewFromConfig(cfg), SecretID: c.SigningSecretARN}); err != nil {
			return err
		}
	}
	if c.WebhookQueueURL == "" {
		q, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(webhookQueue)})
		if err != nil {
			return fmt.Errorf("creating queue %s: %w", webhookQueue, err)
		}
		params["SECUREAI_WEBHOOK_QUEUE_URL"] = aws.ToString(q.QueueUrl)
	}

	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, err := fmt.Fprintf(out, "%s=%s\n", name, params[name]); err != nil {
			return err
		}
	}
	return nil
}

// onThisMachine refuses any endpoint but an http URL on a loopback address or on an address of
// one of this machine's interfaces, so the tables and keys this creates can only land in a local
// emulator.
func onThisMachine(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || endpoint == "" {
		return fmt.Errorf("-endpoint %q: want the emulator's URL such as http://127.0.0.1:5000", endpoint)
	}
	ip := net.ParseIP(u.Hostname())
	if u.Scheme != "http" || (u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback() && !ownAddress(ip))) {
		return fmt.Errorf("-endpoint %q: only an http URL on a loopback address or an address of this machine is accepted (a local emulator, never AWS)", endpoint)
	}
	return nil
}

// ownAddress reports whether ip is assigned to one of this machine's network interfaces.
func ownAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// readParams reads the Parameters of a sam --env-vars file: the variables every function gets.
func readParams(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Parameters map[string]string
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("%s: want {\"Parameters\": {\"NAME\": \"value\", …}}: %w", path, err)
	}
	if file.Parameters == nil {
		return nil, fmt.Errorf("%s: no Parameters object", path)
	}
	return file.Parameters, nil
}

// createKey stores secret as the non-admin key the sample events are sent with, unless it is
// there already.
func createKey(ctx context.Context, s *dynamostore.Store, secret string) error {
	hash, err := apikey.Hash(secret)
	if err != nil {
		return fmt.Errorf("-key: %w", err)
	}
	err = s.CreateKey(ctx, &apikey.Key{ID: "key_events", Hash: hash, Prefix: apikey.Prefix(secret),
		Name: "events", CreatedAt: time.Now().UTC()})
	if errors.Is(err, apikey.ErrExists) {
		return nil
	}
	return err
}

// ensureKeyset creates the signing keyset, as `admin rotate-signing-key` does after a deploy,
// unless the secret holds one already: a second run must not rotate under a running function.
func ensureKeyset(ctx context.Context, store awssecrets.SigningKeys) error {
	_, err := store.Keyset(ctx)
	if errors.Is(err, signing.ErrNoKeyset) {
		_, err = signing.Rotate(ctx, store, time.Now(), signing.DefaultKeepPrevious)
	}
	return err
}
