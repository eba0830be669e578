// The playground's memory store, in a dedicated worker: memtide/worker serves
// the page's `WorkerMemory` (app.js) from here, so compiling the model and
// embedding never freeze the page.
import { serve } from "/memtide/worker.js";

serve();
