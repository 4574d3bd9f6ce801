package report

// pageHTML is the report's template: one document, its style and font
// inline, no script.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title.Plain}}</title>
<style>
@font-face { font-family: "Liberation Sans"; src: url({{.Font}}) format("truetype"); }
body { font-family: "Liberation Sans", sans-serif; margin: 1.5rem; color: #222; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.2rem; border-bottom: 1px solid #ccc; padding-bottom: 0.2rem; margin-top: 2rem; }
p.meta { color: #555; margin-top: 0; }
section { padding-bottom: 0.5rem; }
figure { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; margin: 1rem 0; }
figure svg.chart { width: 36rem; max-width: 100%; height: auto; }
figcaption { flex-basis: 100%; font-weight: bold; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { padding: 0.15rem 0.5rem; border-bottom: 1px solid #e4e4e4; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
div.scroll { max-height: 22rem; overflow-y: auto; }
p.empty { color: #777; font-style: italic; }
nav a { margin-right: 0.8rem; }
</style>
</head>
<body>
<h1>{{.Title.HTML}}</h1>
<p class="meta">Months {{.From}} to {{.To}}; generated {{.Generated}} from the warehouse, read as etl_analyst.</p>
<nav><a href="#targets">Targets</a>{{range .Sections}}<a href="#{{.ID}}">{{.Title.HTML}}</a>{{end}}</nav>
<h2 id="targets">Targets</h2>
<div class="scroll">{{template "table" .Targets}}</div>
{{range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title.HTML}}</h2>
{{with .Intro.HTML}}<p>{{.}}</p>{{end}}
{{range .Figures}}
<figure>
<figcaption>{{.Title.HTML}}</figcaption>
{{if .SVG}}{{.SVG}}{{else}}<p class="empty">{{.Empty}}</p>{{end}}
{{if .Table.Rows}}<div class="scroll">{{template "table" .Table}}</div>{{end}}
</figure>
{{end}}
</section>
{{end}}
</body>
</html>
{{define "table"}}<table>
<thead><tr>{{range $i, $h := .Head}}<th{{if right $ $i}} class="n"{{end}} scope="col">{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if right $ $i}} class="n"{{end}}>{{if data $ $i}}<bdi>{{shown $c}}</bdi>{{else}}{{$c}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}
`
