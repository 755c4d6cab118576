package gateway

import (
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/provider/demo"
)

// Catalog loads the model catalog at path (SECUREAI_CONFIG; "" for the built-in one alone) and,
// with withDemo, starts the demo provider and adds its models. stop ends the demo provider (a
// no-op without one).
func Catalog(path string, withDemo bool) (cat *catalog.Catalog, stop func(), err error) {
	if cat, err = catalog.Load(path); err != nil {
		return nil, nil, err
	}
	if !withDemo {
		return cat, func() {}, nil
	}
	d, err := demo.Start()
	if err != nil {
		return nil, nil, err
	}
	cat.Merge(d.Catalog)
	return cat, func() { _ = d.Close() }, nil
}
