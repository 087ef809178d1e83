// The app of app.js (edgelimit on Redis) at /, beside the same app in memory (/memory) and with the
// peer (/peer).
import { Hono } from "hono";
import app from "./app.js";
import inMemory from "./memory.js";
import peer from "./peer.js";

export default new Hono().route("/memory", inMemory).route("/peer", peer).route("/", app);
