// What the UI adds to the page's globals (main.js exposes the app for the browser console).
interface Window {
  rondo: unknown;
}
