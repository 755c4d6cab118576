package translate

import "strings"

// Image is an image part's URL, read: either base64 data with its media type (from a data: URL)
// or a web URL for the provider to fetch.
type Image struct {
	MediaType, Data string // a data URL's
	URL             string // an http(s) URL; "" for a data URL
}

// ReadImage reads an image part's URL at param. OpenAI takes a data URL or a web URL; anything
// else, or a data URL that is not base64, is a 400 before any provider sees it.
func ReadImage(url, param string) (Image, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, base64 := strings.CutSuffix(meta, ";base64")
		if !ok || !base64 || mediaType == "" {
			return Image{}, Invalid(param, "an image data URL must be base64 encoded: data:<media type>;base64,<data>")
		}
		return Image{MediaType: mediaType, Data: data}, nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		return Image{URL: url}, nil
	}
	return Image{}, Invalid(param, "an image URL must be an http(s) URL or a base64 data URL")
}
