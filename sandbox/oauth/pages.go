package oauth

import (
	"bytes"
	"html/template"
	"net/http"
)

// pageData fills the one template of the pages a person reads.
type pageData struct {
	Title string

	// The verification page.
	Device                bool
	Origin                string
	UserCode, State       string
	DeviceAutoApprove     int
	ApprovePath, DenyPath string

	// An approval or a denial.
	Decision *decision

	// The success page, and errors.
	Code               string
	Error, Description string
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{{.Title}} · data API sandbox</title>
<style>body{font-family:sans-serif;max-width:42em;margin:2em auto;line-height:1.5}code,pre{background:#f3f3f3;padding:0 .2em}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>This is the <strong>sandbox</strong> of the data API: a local stand-in of its token service. Nobody signs in here.</p>
{{- if .Device}}
<p>An application asked for access with the device authorization grant and shows you a user code.
{{- if .UserCode}} User code <strong>{{.UserCode}}</strong>: {{.State}}.{{end}}</p>
<form method="post" action="{{.ApprovePath}}">
<p><label>User code <input name="user_code" value="{{.UserCode}}" autocomplete="off"></label></p>
<p><label>Account (one of the sandbox's API keys; empty: the first) <input name="account" type="password" autocomplete="off"></label></p>
<p><button type="submit">Approve</button> <button type="submit" formaction="{{.DenyPath}}">Deny</button></p>
</form>
<p>From a shell:</p>
<pre>curl -X POST '{{.Origin}}{{.ApprovePath}}?user_code={{if .UserCode}}{{.UserCode}}{{else}}CODE{{end}}'
curl -X POST '{{.Origin}}{{.DenyPath}}?user_code={{if .UserCode}}{{.UserCode}}{{else}}CODE{{end}}'</pre>
<p>Add <code>&amp;account=KEY</code> to approve for another of the sandbox's API keys: the tokens spend that key's units.
{{- if .DeviceAutoApprove}} This sandbox also approves every code by itself at its poll number {{.DeviceAutoApprove}} (<code>--auto-approve</code>).{{end}}</p>
{{- end}}
{{- with .Decision}}
<p>User code <strong>{{.UserCode}}</strong> is <strong>{{.State}}</strong>.
{{- if eq .State "approved"}} The application's next poll receives its tokens.{{else}} The application's next poll is refused (access_denied).{{end}}</p>
{{- end}}
{{- if .Code}}
<p>Authorized. Copy this code into the application:</p>
<pre>{{.Code}}</pre>
{{- if .State}}<p>state: <code>{{.State}}</code></p>{{end}}
{{- end}}
{{- if .Error}}
<p>Error <code>{{.Error}}</code>{{if .Description}}: {{.Description}}{{end}}</p>
{{- else if and .Description (not .Code)}}
<p>{{.Description}}</p>
{{- end}}
</body>
</html>
`))

// renderPage writes a page.
func renderPage(w http.ResponseWriter, status int, data pageData) {
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, data); err != nil {
		http.Error(w, "the sandbox could not render its page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
