package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
)

// ReceiptType is the JWS "typ" of the gateway's signed receipts (GET /receipts/{bundleId}).
const ReceiptType = "secureai-receipt+jws"

// Receipt checks a receipt's signature against keys and returns its JSON claims. Receipts do
// not expire and are not single-use: they are records, verifiable for as long as their key stays
// published.
func Receipt(ctx context.Context, keys Keys, compact string) ([]byte, error) {
	payload, err := verifySigned(ctx, keys, compact, ReceiptType)
	var e *Error
	if errors.As(err, &e) {
		e.what = "receipt" // the message names what the caller checked
	}
	return payload, err
}

// verifySigned checks that compact is an EdDSA JWS of type typ signed by one of keys, and returns
// its payload: the part entitlement tokens and receipts share.
func verifySigned(ctx context.Context, keys Keys, compact, typ string) ([]byte, error) {
	obj, err := jose.ParseSignedCompact(compact, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, &Error{Reason: Malformed, Detail: "not a compact EdDSA JWS", Err: err}
	}
	hdr := obj.Signatures[0].Header
	if got, _ := hdr.ExtraHeaders[jose.HeaderType].(string); got != typ {
		return nil, refuse(Malformed, "typ %q, want %q", got, typ)
	}
	key, err := keys.Key(ctx, hdr.KeyID)
	if err != nil {
		return nil, err
	}
	payload, err := obj.Verify(key)
	if err != nil {
		return nil, &Error{Reason: BadSignature, Detail: fmt.Sprintf("signature does not verify with key %s", hdr.KeyID), Err: err}
	}
	return payload, nil
}
