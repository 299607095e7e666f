package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"testing"
)

// The report tests' helpers, exported for package bench_test's tests.
var (
	CSVRows  = csvRows
	JSONMaps = jsonMaps
)

// csvRows is r's CSV, the header first.
func csvRows(t *testing.T, r *Report) [][]string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// jsonMaps is r's JSON as WriteJSON writes it, with its machine and
// points decoded as maps: which keys it writes, and their values as JSON
// reads them (numbers as float64).
func jsonMaps(t *testing.T, r *Report) (js []byte, machine map[string]any, points []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Machine map[string]any   `json:"machine"`
		Points  []map[string]any `json:"points"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), raw.Machine, raw.Points
}
