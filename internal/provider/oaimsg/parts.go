package oaimsg

import (
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"
)

// EachPart walks content, a string or an array of OpenAI content parts, in order: text is called
// with each non-empty text (a JSON string token, so it can be copied as is), image with each
// image part's URL and its param, for errors. images says whether this message may hold images;
// any other part is a 400 naming the provider, which cannot take it.
func EachPart(content gjson.Result, param, provider string, images bool, text func(gjson.Result), image func(url, param string) error) error {
	if content.Type == gjson.String {
		if content.Str != "" {
			text(content)
		}
		return nil
	}
	for j, part := range content.Array() {
		pp := param + ".content[" + strconv.Itoa(j) + "]"
		switch typ := part.Get("type").String(); {
		case typ == "text":
			if t := part.Get("text"); t.Type == gjson.String && t.Str != "" {
				text(t)
			}
		case typ == "image_url" && images:
			if err := image(part.Get("image_url.url").String(), pp+".image_url.url"); err != nil {
				return err
			}
		default:
			return Invalid(pp+".type", fmt.Sprintf("content part type %q is not supported here by provider %s", typ, provider))
		}
	}
	return nil
}
