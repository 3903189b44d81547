/**
 * The 3D review: the model a host exported of a preview's or a commit's
 * state (binary glTF, one node per element named by its id), drawn with
 * three.js so the person can orbit, pan and zoom it, with the changed
 * elements highlighted by kind and, for a preview, a toggle between the
 * document before the script and what it would leave. This module is
 * loaded only when a viewer is opened (a dynamic import), so a page that
 * never opens one never downloads three.js.
 */
import {
  AmbientLight,
  Box3,
  Color,
  DirectionalLight,
  Material,
  Mesh,
  MeshStandardMaterial,
  Object3D,
  PerspectiveCamera,
  Scene,
  Vector3,
  WebGLRenderer,
} from "three";
import { GLTFLoader } from "three/examples/jsm/loaders/GLTFLoader.js";
import { OrbitControls } from "three/examples/jsm/controls/OrbitControls.js";
import { afterKinds, beforeKinds, type Changes, highlighted, type Kind, legend } from "./kinds";

/** Thrown when the browser has no WebGL: the card keeps its image. */
export class NoWebGL extends Error {}

export interface Models {
  /** The state after the script (a preview's would-be state, or the commit's). */
  after: ArrayBuffer;
  /** For a preview, the document before the script. */
  before?: ArrayBuffer;
}

export interface ViewerHandle {
  /** Shows the state before ("before") or after the script. */
  show(state: "before" | "after"): void;
  /** Frames the changed elements (or the whole model when none changed). */
  fit(): void;
  /** Stops drawing and frees the GPU's resources. */
  dispose(): void;
}

const COLOURS: Record<Kind, number> = { added: 0x2e9d4f, modified: 0xe0a526, deleted: 0xd9534f, context: 0xbfc3c8 };

function material(kind: Kind, dimmed: boolean, ghost = false): MeshStandardMaterial {
  const m = new MeshStandardMaterial({ color: new Color(COLOURS[kind]), roughness: 0.8, metalness: 0 });
  if (ghost) {
    m.transparent = true;
    m.opacity = 0.25;
    m.depthWrite = false;
  } else if (kind === "context" && dimmed) {
    m.transparent = true;
    m.opacity = 0.45;
  }
  return m;
}

/** Each node of a loaded model by its name (the element's id), in the file's order. */
async function nodes(buffer: ArrayBuffer): Promise<{ root: Object3D; named: Map<string, Object3D> }> {
  const gltf = await new GLTFLoader().parseAsync(buffer, "");
  const named = new Map<string, Object3D>();
  const defs = (gltf.parser.json.nodes ?? []) as { name?: string }[];
  for (let i = 0; i < defs.length; i++) {
    const obj = (await gltf.parser.getDependency("node", i)) as Object3D;
    named.set(defs[i].name ?? String(i), obj);
  }
  return { root: gltf.scene, named };
}

function paint(obj: Object3D, m: Material): void {
  obj.traverse((o) => {
    if (o instanceof Mesh) o.material = m;
  });
}

function webgl(): WebGLRenderer {
  const probe = document.createElement("canvas");
  if (!(probe.getContext("webgl2") || probe.getContext("webgl"))) throw new NoWebGL("this browser has no WebGL");
  try {
    return new WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  } catch (err) {
    throw new NoWebGL(`WebGL could not start: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Draws models into box. Its data attributes say what is shown, for people
 * reading the DOM and for tests: data-state (before or after),
 * data-highlighted (the highlighted element ids, comma-separated, sorted)
 * and data-frames (how many frames were drawn).
 */
export async function mountViewer(box: HTMLElement, models: Models, changes: Changes): Promise<ViewerHandle> {
  const renderer = webgl();
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  renderer.domElement.className = "viewer-canvas";
  renderer.domElement.setAttribute("aria-label", "3D model of the change: drag to orbit, pinch or scroll to zoom");
  const after = await nodes(models.after);
  const before = models.before ? await nodes(models.before) : undefined;
  const afterKind = afterKinds([...after.named.keys()], changes);
  const beforeKind = before ? beforeKinds([...before.named.keys()], changes) : undefined;
  const dimmed = highlighted(afterKind).length > 0 || (beforeKind ? highlighted(beforeKind).length > 0 : false);
  for (const [name, obj] of after.named) paint(obj, material(afterKind.get(name) ?? "context", dimmed));
  // What the script deletes stays in the after state as a ghost.
  const ghosts = new Object3D();
  if (before && beforeKind) {
    for (const [name, obj] of before.named) {
      const k = beforeKind.get(name) ?? "context";
      paint(obj, material(k, dimmed));
      if (k === "deleted") {
        // Both models' nodes sit at their scene's root, so the clone keeps
        // its place.
        const ghost = obj.clone(true);
        paint(ghost, material("deleted", dimmed, true));
        ghosts.add(ghost);
      }
    }
  }

  const scene = new Scene();
  scene.background = new Color(0xf7f7f5);
  scene.add(new AmbientLight(0xffffff, 1.2));
  const sun = new DirectionalLight(0xffffff, 1.8);
  sun.position.set(1, 2, 1.5);
  scene.add(sun);
  const camera = new PerspectiveCamera(45, 4 / 3, 0.01, 10000);
  const controls = new OrbitControls(camera, renderer.domElement);
  controls.enableDamping = false;

  let state: "before" | "after" = "after";
  let frames = 0;
  const draw = () => {
    renderer.render(scene, camera);
    box.dataset.frames = String(++frames);
  };
  controls.addEventListener("change", draw);

  const size = () => {
    const width = Math.max(box.clientWidth, 200);
    const height = Math.round(Math.min(width * 0.75, 480));
    renderer.setSize(width, height);
    camera.aspect = width / height;
    camera.updateProjectionMatrix();
    draw();
  };
  const resize = new ResizeObserver(size);

  const fit = () => {
    const focus = new Box3();
    const kinds = state === "after" ? afterKind : beforeKind;
    const named = state === "after" ? after.named : before?.named;
    for (const [name, k] of kinds ?? []) if (k !== "context") focus.expandByObject(named!.get(name)!);
    if (state === "after") focus.expandByObject(ghosts);
    if (focus.isEmpty()) focus.setFromObject(state === "after" ? after.root : before!.root);
    if (focus.isEmpty()) focus.set(new Vector3(-1, -1, -1), new Vector3(1, 1, 1));
    const centre = focus.getCenter(new Vector3());
    const radius = Math.max(focus.getSize(new Vector3()).length() / 2, 0.5);
    const distance = radius / Math.sin((camera.fov * Math.PI) / 360);
    camera.position.copy(centre).add(new Vector3(1, 0.8, 1).normalize().multiplyScalar(distance * 1.1));
    camera.near = distance / 100;
    camera.far = distance * 100;
    camera.updateProjectionMatrix();
    controls.target.copy(centre);
    controls.update();
    draw();
  };

  const show = (s: "before" | "after") => {
    if (s === "before" && !before) return;
    state = s;
    scene.remove(after.root, ghosts);
    if (before) scene.remove(before.root);
    if (s === "after") scene.add(after.root, ghosts);
    else scene.add(before!.root);
    box.dataset.state = s;
    box.dataset.highlighted = highlighted(s === "after" ? afterKind : beforeKind!).join(",");
    draw();
  };

  const caption = document.createElement("div");
  caption.className = "viewer-legend";
  caption.textContent = legend(afterKind, beforeKind);
  box.replaceChildren(renderer.domElement, caption);
  show("after");
  resize.observe(box);
  size();
  fit();
  return {
    show,
    fit,
    dispose() {
      resize.disconnect();
      controls.dispose();
      renderer.dispose();
      renderer.forceContextLoss();
      box.replaceChildren();
    },
  };
}
