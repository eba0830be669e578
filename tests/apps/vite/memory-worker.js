// The worker of the Vite app's worker page: serves the store.
import { serve } from "memtide/worker";

serve();
