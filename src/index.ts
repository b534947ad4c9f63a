import { createApp } from "./app";

// Only the handler is exported: workerd treats every named export of the main module as an entrypoint.
export default createApp();
