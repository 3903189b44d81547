package gateway

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestResultImageTypes shows a host result whose image is not of a type the
// model vendors take (here text/html) is refused at the gateway with a 400
// naming the types allowed, and changes nothing: the same call then takes a
// PNG and the run completes. Before, the HTML image was accepted and every
// later turn of the session failed at the model-router.
func TestResultImageTypes(t *testing.T) {
	base := startGateway(t, realGatewayEnv(startRealStack(t)))
	session, rd, call := startRunToToolCall(t, base, "REVIEW_POLICY_NONE")
	post := func(mime string, data []byte) *http.Response {
		body := `{"toolCallId":"` + call.GetToolCallId() + `","resultToken":"` + call.GetResultToken() +
			`","result":{"committed":true,"images":[{"mimeType":"` + mime + `","data":"` + base64.StdEncoding.EncodeToString(data) + `","view":"iso","width":2,"height":2}]}}`
		return request(t, http.MethodPost, base+"/v1/sessions/"+session+"/tool-results", aliceKey, body)
	}
	html := post("text/html", []byte("<script>alert(1)</script>"))
	b, _ := io.ReadAll(html.Body)
	if html.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "text/html") ||
		!strings.Contains(string(b), "image/png") || !strings.Contains(string(b), "image/jpeg") {
		t.Fatalf("a text/html image: HTTP %d %s; want 400 naming the type and the types allowed", html.StatusCode, b)
	}
	var pngBytes bytes.Buffer
	if err := png.Encode(&pngBytes, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	ok := post("image/png", pngBytes.Bytes())
	if ok.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(ok.Body)
		t.Fatalf("the PNG result after the refusal: HTTP %d %s", ok.StatusCode, b)
	}
	if last := rd.lastEvent(t); last.event != "complete" {
		t.Fatalf("the run ended with %s %s, want complete", last.event, last.data)
	}
}
