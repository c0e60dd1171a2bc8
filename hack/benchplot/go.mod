module github.com/sidecarset/apiserver/hack/benchplot

go 1.26.0

require golang.org/x/image v0.41.0
