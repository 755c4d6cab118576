package httpapi

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/tidwall/gjson"
)

// MaxAdminBody bounds the body of an admin or governance route: the largest real one (a key with
// its failover defaults) is a few hundred bytes.
const MaxAdminBody = 64 << 10

// DecodeJSON reads r's body, a JSON object of at most limit bytes, strictly into dst: a body too
// large is a 413, and a body that is not one JSON object, has data after it, repeats a key at any
// depth, holds a field dst lacks or a value of the wrong type is a 400 naming what is wrong. It
// is the one decode of every route that takes a JSON body (the chat routes read theirs with
// ReadJSONObject, whose fields pass through to providers).
func DecodeJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	body, err := ReadJSONObject(w, r, limit)
	if err != nil {
		return err
	}
	if path := repeatedKey(gjson.Parse(jsonview.String(body)), ""); path != "" {
		return fault.Invalid(path, fmt.Sprintf("field %q appears more than once", path))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	return nil
}

// DecodeOptionalJSON is DecodeJSON for a route whose body may be left out: an empty body leaves
// dst as it is.
func DecodeOptionalJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	return DecodeJSON(w, r, limit, dst)
}

// repeatedKey returns the path of the first key that an object of v (at any depth) holds twice.
// Decoders disagree on which copy wins, so a repeated key is refused rather than guessed.
func repeatedKey(v gjson.Result, path string) string {
	dup := ""
	switch {
	case v.IsObject():
		var seen []string
		v.ForEach(func(k, item gjson.Result) bool {
			p := join(path, k.Str)
			for _, s := range seen {
				if s == k.Str {
					dup = p
					return false
				}
			}
			seen = append(seen, k.Str)
			dup = repeatedKey(item, p)
			return dup == ""
		})
	case v.IsArray():
		i := 0
		v.ForEach(func(_, item gjson.Result) bool {
			dup = repeatedKey(item, path+"["+strconv.Itoa(i)+"]")
			i++
			return dup == ""
		})
	}
	return dup
}

func join(path, key string) string {
	if path == "" {
		return strings.Clone(key)
	}
	return path + "." + key
}

// decodeError names what encoding/json refused. Its unknown-field error has no type of its own
// (only the text `json: unknown field "name"`), so the name is read from that text.
func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var fe *fault.Error
	switch {
	case errors.As(err, &fe):
		return fe // a field's own decoder explained itself
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return fault.Invalid(field, fmt.Sprintf("%s must be a JSON %s", field, jsonKind(typeErr.Type)))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if n, uerr := strconv.Unquote(name); uerr == nil {
			return fault.Invalid(n, fmt.Sprintf("unknown field %q", n))
		}
	}
	return fault.Invalid("body", "invalid JSON body: "+err.Error())
}

// jsonKind is the JSON name of what a value of t decodes from.
func jsonKind(t reflect.Type) string {
	if t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "string" // time.Time and the like
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "array of strings"
		}
		return "array"
	}
	return "object"
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
