package boltstore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/secureai-gateway/gateway/internal/audit"
	"github.com/secureai-gateway/gateway/internal/billing"
	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	bolt "go.etcd.io/bbolt"
)

// A request's writes go to memory at once and to the file together later: these tests take a
// copy of the file as a crash would leave it (what is committed) and open the copy.

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// crashCopy opens a copy of the file at path as it is on disk now, as a restart after a kill -9
// would find it.
func crashCopy(t *testing.T, path string) *Store {
	t.Helper()
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(t.TempDir(), "copy.db")
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	out.Close()
	s, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writeRequest makes the writes of one served request: a charge, a receipt and an audit entry.
func writeRequest(t *testing.T, s *Store, user, bundle string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	u := billing.NewUser(user, billing.DefaultUser, now)
	if err := s.CreateUser(ctx, u); err != nil && !errors.Is(err, billing.ErrExists) {
		t.Fatal(err)
	}
	if err := s.Charge(ctx, user, billing.Charge{Period: u.PeriodStart, Points: 3, Capped: true, PointsCap: u.MonthlyPoints}); err != nil {
		t.Fatal(err)
	}
	r := receipt.Record{BundleID: bundle, KeyID: "key_1", JWS: "h.p.s", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.PutReceipt(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AuditLog().Put(ctx, audit.Entry{ID: "evt_" + bundle, Timestamp: now, Type: "api:model_failover"}, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func pointsUsed(t *testing.T, s *Store, user string) int64 {
	t.Helper()
	u, err := s.User(context.Background(), user)
	if errors.Is(err, billing.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return u.PointsUsed
}

func TestWritesAreReadAtOnceAndCommittedTogether(t *testing.T) {
	s, path := openTemp(t)
	now := time.Now()
	s.p.flushMu.Lock() // hold the flusher off: nothing may be committed while the writes are checked
	writeRequest(t, s, "u1", "b1", now)

	if got := pointsUsed(t, s, "u1"); got != 3 {
		t.Errorf("points used read at once = %d, want 3", got)
	}
	if _, err := s.Receipt(context.Background(), "b1"); err != nil {
		t.Errorf("receipt read at once: %v", err)
	}
	crashed := crashCopy(t, path)
	if got := pointsUsed(t, crashed, "u1"); got != 0 {
		t.Errorf("a crash before the commit kept points used %d, want 0 (the charge is lost, never doubled)", got)
	}
	if _, err := crashed.Receipt(context.Background(), "b1"); !errors.Is(err, receipt.ErrNotFound) {
		t.Errorf("a crash before the commit: receipt err = %v, want ErrNotFound", err)
	}
	s.p.flushMu.Unlock()

	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	committed := crashCopy(t, path)
	if got := pointsUsed(t, committed, "u1"); got != 3 {
		t.Errorf("after the commit: points used %d, want 3", got)
	}
	if _, err := committed.Receipt(context.Background(), "b1"); err != nil {
		t.Errorf("after the commit: receipt: %v", err)
	}
	page, err := committed.AuditLog().Query(context.Background(), audit.Query{Start: now.Add(-time.Minute), End: now.Add(time.Minute), Limit: 10})
	if err != nil || len(page.Entries) != 1 {
		t.Errorf("after the commit: audit entries %d, %v; want 1", len(page.Entries), err)
	}
}

func TestTheFlusherCommitsWithinItsInterval(t *testing.T) {
	s, path := openTemp(t)
	writeRequest(t, s, "u1", "b1", time.Now())
	deadline := time.Now().Add(10 * time.Second) // the interval is 100 ms; a busy machine may take longer
	for pointsUsed(t, crashCopy(t, path), "u1") != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the pending charge was not committed by the flusher")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCloseCommitsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.p.flushMu.Lock() // the flusher cannot commit; only Close's final commit can
	writeRequest(t, s, "u1", "b1", time.Now())
	s.p.flushMu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if got := pointsUsed(t, re, "u1"); got != 3 {
		t.Errorf("after Close and reopen: points used %d, want 3", got)
	}
	if _, err := re.Receipt(context.Background(), "b1"); err != nil {
		t.Errorf("after Close and reopen: receipt: %v", err)
	}
}

func TestSweepDeletesExpiredReceiptsAndAuditEntries(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	for _, r := range []receipt.Record{
		{BundleID: "old", KeyID: "k", JWS: "h.p.s", CreatedAt: old, ExpiresAt: old.Add(time.Hour)},
		{BundleID: "new", KeyID: "k", JWS: "h.p.s", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	} {
		if err := s.PutReceipt(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	log := s.AuditLog()
	for _, e := range []struct {
		id string
		at time.Time
	}{{"evt_old", old}, {"evt_new", now}} {
		if _, err := log.Put(ctx, audit.Entry{ID: e.id, Timestamp: e.at, Type: "api:model_failover"}, e.at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.sweep(now); err != nil {
		t.Fatal(err)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		for _, c := range []struct {
			bucket []byte
			want   int
		}{{bucketReceipts, 1}, {bucketReceiptExpiry, 1}, {bucketAudit, 1}} {
			if n := tx.Bucket(c.bucket).Stats().KeyN; n != c.want {
				t.Errorf("bucket %s holds %d records after the sweep, want %d", c.bucket, n, c.want)
			}
		}
		if tx.Bucket(bucketReceipts).Get([]byte("new")) == nil {
			t.Error("the sweep deleted a receipt still in its retention")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReceiptRecordIsCompactAndExact(t *testing.T) {
	jws := "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoic2VjdXJlYWktcmVjZWlwdCtqd3QifQ." +
		"eyJidW5kbGVfaWQiOiJiMSIsInN1YiI6ImtleV8xIn0." +
		"c2lnbmF0dXJlLWJ5dGVzLXNpZ25hdHVyZS1ieXRlcy1zaWduYXR1cmUtYnl0ZXMtc2lnbmF0dXJlLWJ5dGVzLXNpZ24"
	now := time.Now().UTC()
	for _, r := range []receipt.Record{
		{BundleID: "b1", KeyID: "key_1", JWS: jws, CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{BundleID: "b2", KeyID: "key_1", JWS: "not.a.jws!", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		// Forms that decode but would not encode back to themselves are kept as they are.
		{BundleID: "b3", KeyID: "key_1", JWS: "eyJh\nbGciOiJFZERTQSJ9.e30.c2ln", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{BundleID: "b4", KeyID: "key_1", JWS: "e30=.e30.c2ln", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{BundleID: "b5", KeyID: "key_1", JWS: "e31.e30.c2ln", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{BundleID: "b6", KeyID: "key_1", JWS: "e30.e30.c2ln.e30", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
		{BundleID: "b7", KeyID: "key_1", JWS: "e30..", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	} {
		raw := encodeReceipt(r, nil)
		got, err := decodeReceipt(r.BundleID, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.JWS != r.JWS || got.KeyID != r.KeyID || !got.CreatedAt.Equal(r.CreatedAt) || !got.ExpiresAt.Equal(r.ExpiresAt) {
			t.Errorf("round trip of %s: got %+v, want %+v", r.BundleID, got, r)
		}
		if r.BundleID == "b1" && len(raw) >= len(r.JWS) {
			t.Errorf("a well-formed JWS is kept in %d bytes, no fewer than its %d characters", len(raw), len(r.JWS))
		}
	}
	if _, err := decodeReceipt("b3", []byte{9, 1, 2}, nil); err == nil {
		t.Error("a record of an unknown format decoded")
	}
}

// A receipt stored again under the id of one past its retention replaces it and its expiry index
// entry; the commit looks the old one up only for such an id (one not above the newest in the
// file), so a fresh id costs no read.
func TestAReplacedReceiptLeavesOneIndexEntry(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	put := func(id string, created time.Time) {
		t.Helper()
		if err := s.PutReceipt(ctx, receipt.Record{BundleID: id, KeyID: "k", JWS: "h.p.s", CreatedAt: created, ExpiresAt: created.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	put("b", now.Add(-2*time.Hour)) // expired
	put("c", now)                   // the newest id in the file
	put("b", now)                   // replaces the expired one
	put("a", now)                   // below the newest, never stored before
	err := s.db.View(func(tx *bolt.Tx) error {
		var want [][]byte
		for _, id := range []string{"a", "b", "c"} {
			want = append(want, expiryKey(now.Add(time.Hour), id))
		}
		var got [][]byte
		_ = tx.Bucket(bucketReceiptExpiry).ForEach(func(k, _ []byte) error { got = append(got, k); return nil })
		if len(got) != len(want) {
			t.Fatalf("the expiry index holds %d entries, want %d", len(got), len(want))
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Errorf("index entry %d is %x, want %x", i, got[i], want[i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A receipt drafted with the store's receipt signer is committed as its claims and signed when it
// is read — after its commit, and after a restart — into exactly the JWS a signature at once would
// have made; a draft of any other signer is signed when committed. A store opened without the
// signer refuses to answer such a receipt unsigned, and still refuses its duplicate.
func TestADraftIsKeptAsItsClaimsAndSignedWhenRead(t *testing.T) {
	s, path := openTemp(t)
	ks, err := signing.NewKeyset(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	newSigner := func() *signing.Signer {
		sg, err := signing.NewSigner(ks, receipt.Type)
		if err != nil {
			t.Fatal(err)
		}
		return sg
	}
	signer, other := newSigner(), newSigner()
	s.SignReceiptsWhenRead(signer)
	ctx := context.Background()
	now := time.Now()
	want := map[string]string{}
	for id, sg := range map[string]*signing.Signer{"b1": signer, "b2": other} {
		issuer := &receipt.Issuer{Signer: sg, Now: func() time.Time { return now }}
		claims := receipt.Claims{BundleID: id, KeyID: "key_1", ServedModel: "p/m", Policy: receipt.Policy{Name: "public"}}
		draft, err := issuer.Draft(claims)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := issuer.Sign(claims)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = signed.JWS
		if err := s.PutReceipt(ctx, draft); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	formats := map[string]byte{}
	_ = s.db.View(func(tx *bolt.Tx) error {
		for _, id := range []string{"b1", "b2"} {
			formats[id] = tx.Bucket(bucketReceipts).Get([]byte(id))[0]
		}
		return nil
	})
	if formats["b1"] != receiptClaims || formats["b2"] != receiptDecoded {
		t.Errorf("record formats %v: want the store signer's draft as claims (%d), the other signed (%d)", formats, receiptClaims, receiptDecoded)
	}
	read := func(s *Store, id string) {
		t.Helper()
		for range 2 {
			got, err := s.Receipt(ctx, id)
			if err != nil || got.JWS != want[id] {
				t.Fatalf("%s: got %q, %v; want %q", id, got.JWS, err, want[id])
			}
			obj, err := jose.ParseSignedCompact(got.JWS, []jose.SignatureAlgorithm{jose.EdDSA})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := obj.Verify(ks.Current.Private.Public()); err != nil {
				t.Fatalf("%s does not verify: %v", id, err)
			}
		}
	}
	read(s, "b1")
	read(s, "b2")

	restarted := crashCopy(t, path)
	if _, err := restarted.Receipt(ctx, "b1"); !errors.Is(err, errNoSigner) {
		t.Errorf("a store without the signer read a receipt kept as its claims: %v", err)
	}
	dup := receipt.Record{BundleID: "b1", KeyID: "key_thief", JWS: "h.p.s", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := restarted.PutReceipt(ctx, dup); !errors.Is(err, receipt.ErrExists) {
		t.Errorf("a duplicate of a receipt kept as its claims: %v, want ErrExists", err)
	}
	restarted.SignReceiptsWhenRead(newSigner())
	read(restarted, "b1")
	read(restarted, "b2")
}
