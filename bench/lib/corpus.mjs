// Deterministic synthetic inputs (seeded): chat-like sentences for the
// embedding section, and a memory corpus with clustered 384-d unit vectors
// for retrieval and lexical search.
//
// The retrieval corpus is built so that exact hybrid search and exact
// vector search agree: memories come in clusters of CLUSTER_SIZE, each
// cluster has a person and a topic word no other cluster shares as a pair
// and a centroid; a memory's vector is its centroid plus Gaussian noise,
// its text names the cluster's person and topic plus filler of equal
// length. A query names a cluster's person and topic and its vector lies
// near the centroid: BM25 scores the cluster's members alike and the cosine
// orders them, so the exact cosine top 10 is also the ideal hybrid top 10,
// and recall@10 against it is fair to vector-only and hybrid engines alike.

export const DIMENSIONS = 384;
export const SEED = 20261124;
/** Memories per cluster (sizes up to 120k keep clusters distinct). */
const CLUSTER_SIZE = 25;
/** Noise of a memory around its centroid: pairwise cosine ≈ 1 / (1 + σ²) ≈ 0.6. */
const MEMBER_NOISE = 0.8;
/** Noise of a query around its centroid. */
const QUERY_NOISE = 0.5;

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(random) {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

const pick = (random, list) => list[Math.floor(random() * list.length)];

const NAMES = [
  "alice", "bruno", "chiara", "dmitri", "elena", "farid", "greta", "hiro", "ines", "jonas",
  "kofi", "lena", "mateo", "nadia", "oskar", "priya", "quentin", "rosa", "samir", "tove",
  "umar", "vera", "wanda", "xavier", "yusuf", "zoe", "amara", "bjorn", "celine", "dario",
  "esme", "felix", "gwen", "hamid", "ida", "jasper", "kira", "liam", "mira", "nico",
];
const TOPICS = [
  "garden", "bicycle", "piano", "mortgage", "allergy", "marathon", "sourdough", "kayak", "thesis", "visa",
  "aquarium", "telescope", "wedding", "tattoo", "podcast", "violin", "greenhouse", "camper", "sauna", "chess",
  "pottery", "surfboard", "beehive", "drone", "espresso", "fern", "guitar", "hammock", "igloo", "jigsaw",
  "kimono", "lantern", "mosaic", "notebook", "orchard", "passport", "quilt", "robot", "scooter", "tandem",
  "ukulele", "vineyard", "waffle", "xylophone", "yoga", "zither", "attic", "balcony", "canoe", "dentist",
  "easel", "furnace", "glacier", "harbor", "inhaler", "jacket", "kettle", "ladder", "mailbox", "necklace",
  "opera", "parrot", "quarry", "radiator", "saddle", "tractor", "umbrella", "vaccine", "wallet", "yacht",
  "anchor", "biscuit", "cactus", "diploma", "engine", "falafel", "gazebo", "hoodie", "invoice", "jukebox",
  "keyboard", "lobster", "marble", "noodle", "oyster", "pumpkin", "raincoat", "sandal", "teapot", "uniform",
  "velvet", "walnut", "blender", "compost", "dumbbell", "fireplace", "goggles", "headset", "ironing", "juicer",
];
// Filler fragments: three words each, no stopword (so every memory has the
// same number of index terms), none a person, a topic or a query word.
const OPENINGS = [
  "late yesterday evening", "early sunday morning", "long lunch break", "quiet rainy evening", "weekly team sync",
  "leaving home early", "walking outside alone", "cold windy afternoon", "crowded train station", "old corner bakery",
  "between two calls", "right after dinner", "short coffee break", "slow regional train", "school pickup time",
  "final exam week", "sunny porch lunch", "family birthday party", "long highway drive", "busy farmers market",
  "gym session later", "bedtime routine chat", "weekend trip planning", "video call today", "cooking soup together",
  "late night shift", "morning run route", "quiet beach walk", "neighbour garage sale", "office kitchen chat",
];
const FEELINGS = [
  "seemed quite excited", "sounded rather worried", "looked totally relaxed", "felt fairly confident",
  "seemed mildly annoyed", "grew increasingly curious", "stayed surprisingly calm", "became slightly nervous",
  "remained deeply skeptical", "appeared genuinely happy", "got really frustrated", "seemed clearly tired",
  "felt oddly nostalgic", "seemed totally convinced", "sounded pleasantly surprised", "looked somewhat confused",
  "seemed openly enthusiastic", "felt strangely restless", "stayed fully focused", "became visibly proud",
  "seemed rather distracted", "seemed quietly hopeful", "grew noticeably impatient", "felt truly grateful",
  "looked fairly amused", "sounded truly determined", "seemed honestly undecided", "seemed mostly indifferent",
  "felt completely overwhelmed", "appeared calmly optimistic",
];
const PLANS = [
  "wants another attempt", "plans spending extra", "hopes finishing soon", "needs extra help", "expects good news",
  "prefers waiting longer", "considers selling everything", "keeps practicing daily", "asked several friends",
  "compared three options", "booked next slot", "saved enough money", "ordered new parts", "found cheaper deal",
  "wrote detailed notes", "called customer service", "read online reviews", "watched tutorial videos",
  "joined local club", "postponed final decision", "checked opening hours", "measured everything twice",
  "cleaned whole place", "borrowed proper tools", "tracked weekly progress", "set clear budget",
  "shared recent photos", "followed expert advice", "skipped last session", "promised regular updates",
];

/** A chat-like sentence (no cluster words), for the embedding section. */
function sentence(random) {
  const who = pick(random, NAMES);
  return `${who[0].toUpperCase()}${who.slice(1)} ${pick(random, FEELINGS)} about the ${pick(random, TOPICS)} `
    + `${pick(random, OPENINGS)}, ${pick(random, PLANS)}.`;
}

/** `count` chat-like sentences. */
export function sentences(count, seed = SEED) {
  const random = rng(seed);
  return Array.from({ length: count }, () => sentence(random));
}

/** A text of `tokens` MiniLM tokens ([CLS] and [SEP] included): one token per word. */
export function textOfTokens(tokens) {
  const words = ["the", "memory", "of", "this", "chat", "is", "kept", "in", "a", "tab"];
  return Array.from({ length: tokens - 2 }, (_, i) => words[i % words.length]).join(" ");
}

function unitVector(random, center, noise) {
  const v = new Float32Array(DIMENSIONS);
  const scale = noise / Math.sqrt(DIMENSIONS);
  let norm = 0;
  for (let d = 0; d < DIMENSIONS; d++) {
    v[d] = (center ? center[d] : 0) + scale * gaussian(random);
    norm += v[d] * v[d];
  }
  norm = Math.sqrt(norm);
  for (let d = 0; d < DIMENSIONS; d++) v[d] /= norm;
  return v;
}

const clusterCount = (size) => Math.min(NAMES.length * TOPICS.length, Math.max(1, Math.ceil(size / CLUSTER_SIZE)));
const clusterWords = (c) => [NAMES[c % NAMES.length], TOPICS[Math.floor(c / NAMES.length) % TOPICS.length]];

/**
 * The memory corpus of `size` memories: `texts`, `vectors` (one Float32Array,
 * row after row), and `queries` [{text, vector}] of `queryCount` queries.
 */
export function memoryCorpus(size, queryCount, seed = SEED) {
  const random = rng(seed + size);
  const clusters = clusterCount(size);
  // Centroid noise 1 around the origin: a random unit direction per cluster.
  const centroids = Array.from({ length: clusters }, () => unitVector(random, null, 1));
  const texts = new Array(size);
  const vectors = new Float32Array(size * DIMENSIONS);
  for (let i = 0; i < size; i++) {
    const c = i % clusters;
    const member = Math.floor(i / clusters);
    const [name, topic] = clusterWords(c);
    // The opening differs between any two members of a cluster, so no two
    // memories are near-duplicates.
    const opening = OPENINGS[(member * 7 + c) % OPENINGS.length];
    texts[i] = `${name} mentioned the ${topic} ${opening}, ${pick(random, FEELINGS)}, ${pick(random, PLANS)} (note ${i}).`;
    vectors.set(unitVector(random, centroids[c], MEMBER_NOISE), i * DIMENSIONS);
  }
  const queries = Array.from({ length: queryCount }, (_, q) => {
    const c = (q * 7919) % clusters;
    const [name, topic] = clusterWords(c);
    return { text: `what did ${name} say about the ${topic}?`, vector: unitVector(random, centroids[c], QUERY_NOISE) };
  });
  return { texts, vectors, queries };
}

/** Row `i` of a row-major Float32Array of vectors. */
export const row = (vectors, i) => vectors.subarray(i * DIMENSIONS, (i + 1) * DIMENSIONS);

/** Indices of the `k` rows with the highest dot product with `query` (exact, brute force). */
export function exactTopK(vectors, query, k) {
  const count = vectors.length / DIMENSIONS;
  const best = []; // [score, index], ascending, at most k
  for (let i = 0; i < count; i++) {
    let dot = 0;
    const base = i * DIMENSIONS;
    for (let d = 0; d < DIMENSIONS; d++) dot += vectors[base + d] * query[d];
    if (best.length < k || dot > best[0][0]) {
      best.push([dot, i]);
      best.sort((a, b) => a[0] - b[0]);
      if (best.length > k) best.shift();
    }
  }
  return best.reverse().map(([, i]) => i);
}

/** Share of `truth` found in `found` (both index lists). */
export function recall(found, truth) {
  const set = new Set(found);
  return truth.filter((i) => set.has(i)).length / truth.length;
}
