// Package jsonview lets gjson read a request body without copying it. gjson's *Bytes functions
// copy the whole document into a string first; a body of several megabytes read by three parsers
// would be copied three times per request. A view shares the body's memory instead, so results
// taken from it alias the body: a string kept past the request (a model name in a long-lived map,
// an event) must be cloned with strings.Clone.
package jsonview

import (
	"unsafe"

	"github.com/tidwall/gjson"
)

// String is b as a string, without a copy. b must not change while the string is in use.
func String(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Fields sets out[i] to the value of the member of the JSON object json named names[i], in one
// pass over it (gjson.GetMany walks the document once per name): the first member of that name,
// or the zero Result when there is none. out is the caller's (an array on its stack: no
// allocation per request) and at least as long as names. A name with a dot reads inside the values of
// the members its first part names ("stream_options.include_usage"), the first that has it, as
// gjson.Get does; the part before the first dot is a plain member name, not a gjson path. At most
// 64 names.
func Fields(out []gjson.Result, json string, names ...string) {
	if len(names) > 64 || len(out) < len(names) {
		panic("jsonview.Fields: more than 64 names, or fewer results than names")
	}
	clear(out[:len(names)])
	var found uint64 // names whose member was met: the first one wins, as with gjson.Get
	gjson.Parse(json).ForEach(func(k, v gjson.Result) bool {
		for i, name := range names {
			if found&(1<<i) != 0 || len(name) < len(k.Str) || name[:len(k.Str)] != k.Str {
				continue
			}
			switch {
			case len(name) == len(k.Str):
				out[i], found = v, found|1<<i
			case name[len(k.Str)] == '.':
				if r := v.Get(name[len(k.Str)+1:]); r.Exists() { // else a later member may have it
					out[i], found = r, found|1<<i
				}
			}
		}
		return true
	})
}
