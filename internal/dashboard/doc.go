// Package dashboard serves muster's read-only web dashboard: the cluster as a heat map
// of its devices coloured by what holds them, the queues with their pending groups, one
// group's timeline with the same debugging walk as `muster explain`, and the cost of
// gang scheduling (device-seconds held before Ready, cleanup time) per queue.
//
// Every page is rendered on the server from a controller-runtime cache (muster's own
// informers when it runs inside `muster serve`), so a viewer adds no load to the API
// server; a few lines of script fetch the page again every few seconds and swap its
// main region in place. Assets are embedded: no build step, no CDN.
//
// The Handler does no authentication of its own: whoever can reach its address can
// read what muster sees. Put an authenticating http.Handler in front of it (New's
// result is a plain http.Handler), or bind it to a loopback address and reach it with
// kubectl port-forward, as `muster serve` requires today.
package dashboard
