// Starts Swagger UI on /api/v1/docs from the service's own copy (static/swagger-ui) and the API's own schema.
// A file, not an inline script: the docs page's Content-Security-Policy runs only scripts of this origin.
window.addEventListener("DOMContentLoaded", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapi,
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    presets: [SwaggerUIBundle.presets.apis],
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null, // else a badge image from validator.swagger.io
  });
});
