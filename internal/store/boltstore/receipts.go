package boltstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/secureai-gateway/gateway/internal/receipt"
	"github.com/secureai-gateway/gateway/internal/signing"
	bolt "go.etcd.io/bbolt"
)

// Receipts (receipt.Store): bundle id → record, written behind (writebehind.go). A record is kept
// compact — times as varints, and a draft by its claims alone, signed when it is read
// (SignReceiptsWhenRead); a signed one by its three JWS parts decoded from base64 — and an index by
// expiry lets the sweeper delete receipts past their retention without reading the others.
//
// Why a draft is signed when read, not when committed: the signature (~25 µs of Ed25519) was the
// largest single cost of a served request in this process, and receipts are read rarely. The JWS
// read is the one a signature at commit would have made (the same claims, the same key, a
// deterministic signature), and after a key rotation it is made with the current key, which the
// JWKS publishes. Signing earlier would protect nothing more here: the signing keyset is in this
// same file, so whoever could change a stored receipt could sign it too.

var (
	bucketReceipts      = []byte("receipts")
	bucketReceiptExpiry = []byte("receipt_expiry") // expiry (8 bytes, Unix ns, big-endian) + bundle id → nothing
)

// PutReceipt implements receipt.Store.
func (s *Store) PutReceipt(_ context.Context, r receipt.Record) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	old, err := s.receiptLocked(r.BundleID)
	if errors.Is(err, errNoSigner) {
		err = nil // its times are all this asks
	}
	if err == nil && time.Now().Before(old.ExpiresAt) {
		return receipt.ErrExists
	}
	if err != nil && !errors.Is(err, receipt.ErrNotFound) {
		return err
	}
	p.receipts[r.BundleID] = r // a draft is signed by the flusher
	p.wrote()
	return nil
}

// Receipt implements receipt.Store.
func (s *Store) Receipt(_ context.Context, bundleID string) (receipt.Record, error) {
	s.p.mu.Lock()
	r, err := s.receiptLocked(bundleID)
	s.p.mu.Unlock()
	if err != nil {
		return r, err
	}
	if !time.Now().Before(r.ExpiresAt) {
		return receipt.Record{}, receipt.ErrNotFound
	}
	return r.Signed() // a draft, pending or committed, is signed here, outside the store's lock
}

// SignReceiptsWhenRead makes the store keep the receipts that signer drafts as their claims and
// sign them when they are read, instead of when they are committed. The local server calls it
// with the signer its receipts are drafted with, made from this store's keyset.
func (s *Store) SignReceiptsWhenRead(signer *signing.Signer) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.signer = signer
}

// receiptLocked finds a receipt pending or committed, expired or not, signed or a draft. Call it
// with p.mu held.
func (s *Store) receiptLocked(bundleID string) (r receipt.Record, err error) {
	if r, ok := s.p.receipt(bundleID); ok {
		return r, nil
	}
	if bundleID > s.p.newestReceipt {
		return r, receipt.ErrNotFound
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketReceipts).Get([]byte(bundleID))
		if raw == nil {
			return receipt.ErrNotFound
		}
		r, err = decodeReceipt(bundleID, raw, s.p.signer)
		return err
	})
	return r, err
}

// encodedReceipt is a pending receipt, encoded for the file.
type encodedReceipt struct {
	id      string
	expires time.Time
	raw     []byte
}

// encodeReceipts encodes a Flush's receipts, in bundle id order: each insert then appends to the
// last page (a map's order would split pages at random points and leave them part empty). A
// draft of signer is kept as its claims; any other is signed now.
func encodeReceipts(pending map[string]receipt.Record, signer *signing.Signer) ([]encodedReceipt, error) {
	out := make([]encodedReceipt, 0, len(pending))
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		r := pending[id]
		if signer != nil && r.DraftedBy(signer) {
			claims, err := r.Payload()
			if err != nil {
				return nil, err
			}
			out = append(out, encodedReceipt{id: id, expires: r.ExpiresAt, raw: encodeReceipt(r, claims)})
			continue
		}
		r, err := r.Signed()
		if err != nil {
			return nil, err
		}
		out = append(out, encodedReceipt{id: id, expires: r.ExpiresAt, raw: encodeReceipt(r, nil)})
	}
	return out, nil
}

// putReceipts writes a Flush's receipts and their expiry index. A receipt it replaces (one past
// its retention) leaves the index with it; an id above newest, the greatest in the file — every
// fresh, time-ordered one — replaces none, so it is not looked up first.
func putReceipts(tx *bolt.Tx, receipts []encodedReceipt, newest string) error {
	b, idx := tx.Bucket(bucketReceipts), tx.Bucket(bucketReceiptExpiry)
	// Bundle ids and expiries grow with time, so inserts append: full pages waste nothing.
	b.FillPercent, idx.FillPercent = appendFill, appendFill
	for _, e := range receipts {
		id := e.id
		if id <= newest {
			if err := unindex(b, idx, id); err != nil {
				return err
			}
		}
		if err := b.Put([]byte(id), e.raw); err != nil {
			return err
		}
		if err := idx.Put(expiryKey(e.expires, id), nil); err != nil {
			return err
		}
	}
	return nil
}

// unindex removes the expiry index entry of the receipt stored under id, if there is one.
func unindex(b, idx *bolt.Bucket, id string) error {
	old := b.Get([]byte(id))
	if old == nil {
		return nil
	}
	prev, err := decodeReceipt(id, old, nil)
	if err != nil && !errors.Is(err, errNoSigner) {
		return nil // a record that does not decode has no expiry to find
	}
	return idx.Delete(expiryKey(prev.ExpiresAt, id))
}

// appendFill is how full a page split leaves a bucket whose keys arrive in order: full (bbolt's
// default, 0.5, suits random keys; with records of ~0.7 KB even 0.9 leaves a quarter of each page
// empty, four records where five fit).
const appendFill = 1.0

func expiryKey(t time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(max(0, t.UnixNano())))
	return append(k, id...)
}

// sweepReceipts deletes up to limit receipts whose retention ended before now, oldest first.
func sweepReceipts(tx *bolt.Tx, now time.Time, limit int) error {
	b, idx := tx.Bucket(bucketReceipts), tx.Bucket(bucketReceiptExpiry)
	end := expiryKey(now, "")
	var done [][]byte
	c := idx.Cursor()
	for k, _ := c.First(); k != nil && len(done) < limit && bytes.Compare(k[:8], end) < 0; k, _ = c.Next() {
		done = append(done, bytes.Clone(k))
	}
	for _, k := range done {
		if err := b.Delete(k[8:]); err != nil {
			return err
		}
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// A receipt record is: format byte, created and expires (Unix ns, varints), the key id, then the
// receipt. Format 2 keeps a draft's claims (the JWS payload), signed when read; format 1 a
// well-formed compact JWS's three parts decoded (a quarter smaller than base64); format 0 any
// other JWS as it is. Records written as JSON by earlier versions still read.
const (
	receiptAsIs    = 0
	receiptDecoded = 1
	receiptClaims  = 2
)

// errNoSigner is a record kept as its claims read by a store that has no signer for it.
var errNoSigner = errors.New("boltstore: a receipt kept as its claims is read by a store with no receipt signer (SignReceiptsWhenRead)")

// encodeReceipt encodes r: its claims when claims is not nil (a draft), else its JWS.
func encodeReceipt(r receipt.Record, claims []byte) []byte {
	var parts [3][]byte
	format := byte(receiptClaims)
	if claims == nil {
		format = receiptAsIs
		if p, ok := decodeJWS(r.JWS); ok {
			parts, format = p, receiptDecoded
		}
	}
	b := make([]byte, 0, 32+len(r.KeyID)+len(r.JWS)+len(claims))
	b = append(b, format)
	b = binary.AppendVarint(b, r.CreatedAt.UnixNano())
	b = binary.AppendVarint(b, r.ExpiresAt.UnixNano())
	b = appendBytes(b, []byte(r.KeyID))
	switch format {
	case receiptClaims:
		return append(b, claims...)
	case receiptAsIs:
		return append(b, r.JWS...)
	}
	for _, p := range parts {
		b = appendBytes(b, p)
	}
	return b
}

// decodeReceipt decodes a record; one kept as its claims comes back a draft of signer, or with its
// times and errNoSigner when signer is nil.
func decodeReceipt(id string, raw []byte, signer *signing.Signer) (receipt.Record, error) {
	if len(raw) > 0 && raw[0] == '{' {
		var r receipt.Record
		if err := json.Unmarshal(raw, &r); err != nil {
			return r, fmt.Errorf("boltstore: corrupt receipt record: %w", err)
		}
		return r, nil
	}
	corrupt := fmt.Errorf("boltstore: corrupt receipt record %q", id)
	if len(raw) == 0 || raw[0] > receiptClaims {
		return receipt.Record{}, corrupt
	}
	format, rest := raw[0], raw[1:]
	created, n := binary.Varint(rest)
	if n <= 0 {
		return receipt.Record{}, corrupt
	}
	rest = rest[n:]
	expires, n := binary.Varint(rest)
	if n <= 0 {
		return receipt.Record{}, corrupt
	}
	key, rest, ok := cutBytes(rest[n:])
	if !ok {
		return receipt.Record{}, corrupt
	}
	r := receipt.Record{BundleID: id, KeyID: string(key), CreatedAt: time.Unix(0, created).UTC(), ExpiresAt: time.Unix(0, expires).UTC()}
	switch format {
	case receiptAsIs:
		r.JWS = string(rest)
		return r, nil
	case receiptClaims:
		if signer == nil {
			return r, errNoSigner
		}
		return r.Redraft(signer, bytes.Clone(rest)), nil // rest is the file's memory, valid only in its transaction
	}
	var jws strings.Builder
	for i := range 3 {
		var part []byte
		if part, rest, ok = cutBytes(rest); !ok {
			return receipt.Record{}, corrupt
		}
		if i > 0 {
			jws.WriteByte('.')
		}
		jws.WriteString(base64.RawURLEncoding.EncodeToString(part))
	}
	r.JWS = jws.String()
	return r, nil
}

// decodeJWS splits a compact JWS into its three decoded parts (in one buffer); ok is false unless
// each part is canonical unpadded base64url, so encoding them again gives back exactly the JWS.
func decodeJWS(jws string) (parts [3][]byte, ok bool) {
	if strings.Count(jws, ".") != 2 {
		return parts, false
	}
	enc := base64.RawURLEncoding.Strict() // Strict refuses non-zero padding bits
	src := []byte(jws)
	buf := make([]byte, enc.DecodedLen(len(src)))
	for i := range parts {
		f := src
		if i < 2 {
			f, src, _ = bytes.Cut(src, []byte{'.'})
		}
		n, err := enc.Decode(buf, f)
		// The decoder skips CR and LF: a part that decodes to fewer bytes than its length
		// implies had some, and would not encode back to itself.
		if err != nil || enc.EncodedLen(n) != len(f) {
			return parts, false
		}
		parts[i], buf = buf[:n:n], buf[n:]
	}
	return parts, true
}

func appendBytes(b, p []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(p))), p...) }

func cutBytes(b []byte) (p, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}
