"use client";
// An app-router page: the store lives in the browser (IndexedDB), so it is
// opened in an effect, on the client.
import { useEffect, useState } from "react";
import { runApp } from "../../vite/main.js";

export default function Page() {
  const [outcome, setOutcome] = useState(null);
  useEffect(() => {
    runApp().then((result) => {
      window.memtideApp = result;
      setOutcome(result);
    });
  }, []);
  return <pre>{outcome ? JSON.stringify(outcome) : "opening…"}</pre>;
}
