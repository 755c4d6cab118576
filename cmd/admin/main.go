// Command admin manages a deployed gateway's API keys directly in DynamoDB, starting with the
// first admin key that every other admin call needs. It uses the AWS default credential chain.
//
//	go run ./cmd/admin create-key -table <ApiKeysTable> -name ops -admin
//	go run ./cmd/admin create-key -table <ApiKeysTable> -name app -models openai/gpt-5-nano,anthropic/claude-sonnet-4 -defaults openai/gpt-5-nano,anthropic/claude-sonnet-4
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/awsclient"
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/dynamostore"
)

func main() {
	commands := map[string]func([]string) error{"create-key": createKey, "rotate-signing-key": rotateSigningKey}
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: admin create-key -table TABLE -name NAME [-admin] [-user ID] [-models a,b] [-defaults a,b,c]")
		fmt.Fprintln(os.Stderr, "       admin rotate-signing-key [-secret ARN | -db FILE] [-keep N]")
		os.Exit(2)
	}
	if err := commands[os.Args[1]](os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "admin:", err)
		os.Exit(1)
	}
}

func createKey(args []string) error {
	fs := flag.NewFlagSet("create-key", flag.ContinueOnError)
	table := fs.String("table", os.Getenv("SECUREAI_TABLE_API_KEYS"), "the stack's ApiKeysTable")
	name := fs.String("name", "", "a name to recognise the key by")
	admin := fs.Bool("admin", false, "may call the admin routes")
	user := fs.String("user", "", "the user the key bills to")
	models := fs.String("models", "", "comma-separated allowlist of models (empty: all)")
	defaults := fs.String("defaults", "", "comma-separated failoverDefaults chain (at most 3)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *table == "" || *name == "" {
		return fmt.Errorf("-table and -name are required")
	}
	cat, err := catalog.Load(os.Getenv("SECUREAI_CONFIG"))
	if err != nil {
		return err
	}
	for _, m := range append(list(*models), list(*defaults)...) {
		if _, ok := cat.Models[m]; !ok {
			return fmt.Errorf("model %q is not in the catalog (built-in plus SECUREAI_CONFIG)", m)
		}
	}
	secret := apikey.NewSecret()
	hash, _ := apikey.Hash(secret)
	k := &apikey.Key{ID: apikey.NewID(), Hash: hash, Prefix: apikey.Prefix(secret), Name: *name, UserID: *user,
		Admin: *admin, AllowedModels: list(*models), CreatedAt: time.Now().UTC()}
	if d := list(*defaults); d != nil {
		fd, err := chain.NormalizeDefaults(chain.Defaults{Models: d})
		if err != nil {
			return err
		}
		k.FailoverDefaults = &fd
	}

	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	awsclient.Guard(&cfg)
	store := dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.Tables{APIKeys: *table})
	if err := store.CreateKey(ctx, k); err != nil {
		return err
	}
	fmt.Printf("Created key %s (%s). Its secret, shown once:\n\n    %s\n", k.ID, k.Name, secret)
	return nil
}

func list(csv string) []string {
	var out []string
	for _, m := range strings.Split(csv, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}
