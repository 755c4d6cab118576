package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/secureai-gateway/gateway/internal/aws/awsclient"
	"github.com/secureai-gateway/gateway/internal/aws/awssecrets"
	"github.com/secureai-gateway/gateway/internal/signing"
	"github.com/secureai-gateway/gateway/internal/store/boltstore"
)

// rotateSigningKey rotates the Ed25519 keyset that signs entitlement tokens and receipts, creating
// it the first time (a deploy runs it once before the first request). New tokens use the new key
// once a gateway loads it (a Lambda: at its next cold start; locally: at restart); everything
// signed before stays verifiable while its key is among the kept previous keys.
//
//	go run ./cmd/admin rotate-signing-key -secret <SigningKeySecretArn>   # the cloud
//	go run ./cmd/admin rotate-signing-key -db .secureai/gateway.db       # local, gateway stopped
func rotateSigningKey(args []string) error {
	fs := flag.NewFlagSet("rotate-signing-key", flag.ContinueOnError)
	secret := fs.String("secret", os.Getenv("SECUREAI_SIGNING_SECRET_ARN"), "the stack's signing keyset secret (cloud)")
	dataDir := os.Getenv("SECUREAI_DATA_DIR")
	if dataDir == "" {
		dataDir = ".secureai"
	}
	db := fs.String("db", filepath.Join(dataDir, "gateway.db"), "the local store file, when -secret is empty")
	keep := fs.Int("keep", signing.DefaultKeepPrevious, "how many retired keys stay published in the JWKS")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keep < 1 {
		return fmt.Errorf("-keep must be at least 1, or tokens signed just before the rotation stop verifying")
	}
	ctx := context.Background()
	var store signing.Store
	if *secret != "" {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return err
		}
		awsclient.Guard(&cfg)
		store = awssecrets.SigningKeys{API: secretsmanager.NewFromConfig(cfg), SecretID: *secret}
	} else {
		s, err := boltstore.Open(*db)
		if err != nil {
			return err
		}
		defer s.Close()
		store = s
	}
	ks, err := signing.Rotate(ctx, store, time.Now(), *keep)
	if err != nil {
		return err
	}
	fmt.Printf("Signing with key %s from the next start; published next: %s; previous kept: %d.\n", ks.Current.ID, ks.Next.ID, len(ks.Previous))
	return nil
}
