// Package jsonview lets gjson read a request body without copying it. gjson's *Bytes functions
// copy the whole document into a string first; a body of several megabytes read by three parsers
// would be copied three times per request. A view shares the body's memory instead, so results
// taken from it alias the body: a string kept past the request (a model name in a long-lived map,
// an event) must be cloned with strings.Clone.
package jsonview

import "unsafe"

// String is b as a string, without a copy. b must not change while the string is in use.
func String(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
