// The /docs page: Swagger UI over this server's own /openapi.json (served from node_modules, no CDN).
window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    // the base layout: no top bar (its URL box has nothing to explore here, and its logo is an SVG with an inline
    // <style> that the page's Content-Security-Policy refuses)
    layout: 'BaseLayout',
  });
};
