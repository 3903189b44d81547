package mcpserver

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestIDWriterAcrossWrites shows a stand-in id split over two writes of the
// transport still comes back as the client's id, and that text which only
// begins like one is written unchanged.
func TestIDWriterAcrossWrites(t *testing.T) {
	rec := httptest.NewRecorder()
	w := newIDWriter(rec, "nexus-rpc-id-ABC", json.RawMessage("1.5"))
	for _, p := range []string{`data: {"id":"nexus-rp`, `c-id-ABC","result":{}}` + "\n\n", `"nexus-rpc`} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	w.finish()
	if got, want := rec.Body.String(), `data: {"id":1.5,"result":{}}`+"\n\n"+`"nexus-rpc`; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
	body := []byte(`{ "jsonrpc":"2.0", "params":{"id":7}, "id" : 1.2e59 ,"method":"ping"}`)
	out, standIn, ok := withStandInID(body, json.RawMessage("1.2e59"))
	if !ok || string(out) != `{ "jsonrpc":"2.0", "params":{"id":7}, "id" : "`+standIn+`" ,"method":"ping"}` {
		t.Errorf("stand-in body %q (%v)", out, ok)
	}
}
