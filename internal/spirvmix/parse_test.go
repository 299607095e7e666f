package spirvmix

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Inst
	}{
		{
			name: "result and no result",
			text: "          %1 = OpExtInstImport \"GLSL.std.450\"\n               OpMemoryModel Logical GLSL450\n",
			want: []Inst{
				{Result: "%1", Op: "OpExtInstImport", Args: []string{"GLSL.std.450"}, Line: 1},
				{Op: "OpMemoryModel", Args: []string{"Logical", "GLSL450"}, Line: 2},
			},
		},
		{
			name: "comments and blank lines",
			text: "; SPIR-V\n\n; Bound: 3\n%2 = OpTypeInt 32 0 ; a comment after\n",
			want: []Inst{{Result: "%2", Op: "OpTypeInt", Args: []string{"32", "0"}, Line: 4}},
		},
		{
			name: "a string with spaces, a semicolon, an escaped quote and a newline",
			text: "OpSource WGSL 0 \"let s = \\\"a ; b\\\";\nnext\"\nOpCapability Shader\n",
			want: []Inst{
				{Op: "OpSource", Args: []string{"WGSL", "0", "let s = \"a ; b\";\nnext"}, Line: 1},
				{Op: "OpCapability", Args: []string{"Shader"}, Line: 3},
			},
		},
		{
			name: "tabs and no final newline",
			text: "%a\t=\tOpLoad %f %p Aligned 4",
			want: []Inst{{Result: "%a", Op: "OpLoad", Args: []string{"%f", "%p", "Aligned", "4"}, Line: 1}},
		},
		{
			name: "empty",
			text: "; nothing\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for i := range got {
				if len(got[i].Args) == 0 {
					got[i].Args = nil
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"not an instruction", "%1 = OpTypeVoid\nfoo bar\n", "line 2: \"foo\" is not an instruction"},
		{"result without instruction", "%1 =\n", "line 1: \"%1\" has a result but no instruction"},
		{"unterminated string", "OpSource WGSL 0 \"abc\n", "line 1: unterminated string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
