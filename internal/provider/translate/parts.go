package translate

import (
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"
)

// AppendParts appends content, a string or an array of OpenAI content parts, to the open JSON
// array b in the provider's shape, comma-separated: text writes each non-empty text (a JSON
// string token, so it is copied as is), image each image part from its URL and param, for errors.
// images says whether this message may hold images; any other part is a 400 naming the provider,
// which cannot take it.
func AppendParts(b []byte, content gjson.Result, param, provider string, images bool,
	text func(b []byte, t gjson.Result) []byte, image func(b []byte, url, param string) ([]byte, error)) ([]byte, error) {
	if content.Type == gjson.String {
		if content.Str != "" {
			b = text(Sep(b), content)
		}
		return b, nil
	}
	for j, part := range content.Array() {
		pp := param + ".content[" + strconv.Itoa(j) + "]"
		switch typ := part.Get("type").String(); {
		case typ == "text":
			if t := part.Get("text"); t.Type == gjson.String && t.Str != "" {
				b = text(Sep(b), t)
			}
		case typ == "image_url" && images:
			var err error
			if b, err = image(Sep(b), part.Get("image_url.url").String(), pp+".image_url.url"); err != nil {
				return nil, err
			}
		default:
			return nil, Invalid(pp+".type", fmt.Sprintf("content part type %q is not supported here by provider %s", typ, provider))
		}
	}
	return b, nil
}
