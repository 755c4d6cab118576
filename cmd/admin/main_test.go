package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheTeamFlowOnTheEmbeddedStore runs the commands a team uses, in order, against a local store.
func TestTheTeamFlowOnTheEmbeddedStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gateway.db")
	t.Setenv("SECUREAI_TABLE_API_KEYS", "")
	cmd := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), args[0], append([]string{"-db", db}, args[1:]...), &out); err != nil {
			t.Fatalf("admin %s: %v", strings.Join(args, " "), err)
		}
		return out.String()
	}
	out := cmd("create-key", "-name", "ops", "-admin")
	if !regexp.MustCompile(`(?m)^    sk-[0-9a-f]{64}$`).MatchString(out) {
		t.Fatalf("create-key did not print the secret:\n%s", out)
	}
	if out := cmd("set-user", "-id", "team-a", "-points", "2000", "-renewal-day", "1", "-usage-by-model", "true", "-dollar-limit", "50", "-budget-thresholds", "none"); !strings.Contains(out, `"budgetThresholds": []`) {
		t.Errorf("set-user -budget-thresholds none:\n%s", out)
	}
	var stderr0 bytes.Buffer
	if err := run(context.Background(), "set-user", []string{"-db", db, "-id", "team-a", "-budget-thresholds", "50,150"}, &stderr0); err == nil || !strings.Contains(err.Error(), "budgetThresholds") {
		t.Errorf("-budget-thresholds 50,150: %v, want a refusal naming budgetThresholds", err)
	}
	out = cmd("create-key", "-name", "app", "-user", "team-a", "-per-minute", "30", "-daily", "500",
		"-defaults", "openai/gpt-5-nano,anthropic/claude-sonnet-4", "-timeout-ms", "5")
	id := regexp.MustCompile(`Created key (key_[0-9a-f]+)`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, `"requestsPerMinute": 30`) || !strings.Contains(out, `"timeout_ms": 1000`) {
		t.Fatalf("create-key with limits and defaults:\n%s", out)
	}
	cmd("revoke-key", "-id", id[1])
	out = cmd("list-keys")
	if !strings.Contains(out, "ops") || !regexp.MustCompile(id[1]+`.*team-a\s+revoked`).MatchString(out) {
		t.Errorf("list-keys:\n%s", out)
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), "create-key", []string{"-db", db, "-name", "x", "-per-minute", "5000"}, &stderr); err == nil {
		t.Error("a per-minute limit over 1000 was accepted")
	}
}
