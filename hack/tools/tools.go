// Package tools pins the code generators muster's `make generate` runs. It is a
// separate module so that the generators' own k8s.io dependency versions do not
// meet the main module's replace directives; go.mod's tool directive is the pin.
package tools
