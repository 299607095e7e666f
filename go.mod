module github.com/attn-go/attn

go 1.26

require (
	github.com/gogpu/gputypes v0.5.2
	github.com/sbinet/npyio v0.9.0
	gonum.org/v1/gonum v0.17.0
)
