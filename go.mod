module github.com/attn-go/attn

go 1.26

require (
	github.com/gogpu/gputypes v0.5.2
	github.com/rajveermalviya/go-webgpu/wgpu v0.17.1
	github.com/sbinet/npyio v0.9.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/campoy/embedmd v1.0.0 // indirect
	github.com/nlpodyssey/gopickle v0.3.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/text v0.23.0 // indirect
)
