// Package routecheck holds only a test: it checks that every endpoint the
// web UI reads (webui.Routes) is served by the real master router
// (master/endpoints) and agent handler (agent/httpapi, agent/files), with
// the query parameters the UI uses, agents' through the master's proxy
// (master/agentproxy); and it runs the pages' pure functions (reservations,
// the task page's usage and health) in node. It lives apart from package
// webui so that webui itself imports nothing from mezzo and its tests do
// not depend on the master and agent compiling.
package routecheck
