// Renders Go text/templates the way Ollama does (Messages with Role and Content), for
// tests/result/test_modelfile.py. Input: JSON [{"Template", "Messages"}]; output: JSON [rendered].
package main

import (
	"encoding/json"
	"os"
	"text/template"
)

type Message struct {
	Role    string
	Content string
}

type Input struct {
	Template string
	Messages []Message
}

func main() {
	var in []Input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		panic(err)
	}
	var out []string
	for _, c := range in {
		t := template.Must(template.New("m").Parse(c.Template))
		var b []byte
		w := &buf{&b}
		if err := t.Execute(w, map[string]any{"Messages": c.Messages}); err != nil {
			panic(err)
		}
		out = append(out, string(b))
	}
	json.NewEncoder(os.Stdout).Encode(out)
}

type buf struct{ b *[]byte }

func (w *buf) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }
