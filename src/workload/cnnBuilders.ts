// Builders for the torchvision CNNs (ResNet, VGG) as layer lists, with torchvision's layer names.
import type { CnnLayer, CnnNetwork } from "./cnn.js";

const conv = (name: string, out: number, kernel: number, stride = 1, padding = 0, bias = false): CnnLayer => ({
  type: "conv",
  name,
  out,
  kernel,
  stride,
  padding,
  bias,
});
const bn = (name: string): CnnLayer => ({ type: "batchnorm", name });
const relu = (name: string): CnnLayer => ({ type: "relu", name, inplace: true });

/** torchvision's BasicBlock (ResNet-18/34): two 3×3 convolutions. */
function basicBlock(name: string, inChannels: number, planes: number, stride: number): CnnLayer {
  const body = [
    conv(`${name}.conv1`, planes, 3, stride, 1),
    bn(`${name}.bn1`),
    relu(`${name}.relu`),
    conv(`${name}.conv2`, planes, 3, 1, 1),
    bn(`${name}.bn2`),
  ];
  const needsProjection = stride !== 1 || inChannels !== planes;
  const shortcut = needsProjection ? [conv(`${name}.downsample.0`, planes, 1, stride), bn(`${name}.downsample.1`)] : [];
  return { type: "residual", name, body, shortcut, relu: true };
}

/** torchvision's Bottleneck (ResNet-50 and deeper, "v1.5": the stride sits on the 3×3 convolution). */
function bottleneck(name: string, inChannels: number, planes: number, stride: number): CnnLayer {
  const out = planes * 4;
  const body = [
    conv(`${name}.conv1`, planes, 1),
    bn(`${name}.bn1`),
    relu(`${name}.relu1`),
    conv(`${name}.conv2`, planes, 3, stride, 1),
    bn(`${name}.bn2`),
    relu(`${name}.relu2`),
    conv(`${name}.conv3`, out, 1),
    bn(`${name}.bn3`),
  ];
  const needsProjection = stride !== 1 || inChannels !== out;
  const shortcut = needsProjection ? [conv(`${name}.downsample.0`, out, 1, stride), bn(`${name}.downsample.1`)] : [];
  return { type: "residual", name, body, shortcut, relu: true };
}

const RESNET_BLOCKS: Record<number, { block: "basic" | "bottleneck"; counts: [number, number, number, number] }> = {
  18: { block: "basic", counts: [2, 2, 2, 2] },
  34: { block: "basic", counts: [3, 4, 6, 3] },
  50: { block: "bottleneck", counts: [3, 4, 6, 3] },
  101: { block: "bottleneck", counts: [3, 4, 23, 3] },
  152: { block: "bottleneck", counts: [3, 8, 36, 3] },
};

/** torchvision.models.resnet{18,34,50,101,152} (He et al. 2016, Table 1). */
export function resnet(depth: 18 | 34 | 50 | 101 | 152, classes = 1000): CnnNetwork {
  const spec = RESNET_BLOCKS[depth];
  if (!spec) throw new Error(`no ResNet-${depth}`);
  const layers: CnnLayer[] = [
    conv("conv1", 64, 7, 2, 3),
    bn("bn1"),
    relu("relu"),
    { type: "maxpool", name: "maxpool", kernel: 3, stride: 2, padding: 1 },
  ];
  const expansion = spec.block === "basic" ? 1 : 4;
  let channels = 64;
  spec.counts.forEach((count, stage) => {
    const planes = 64 * 2 ** stage;
    for (let i = 0; i < count; i++) {
      const stride = stage > 0 && i === 0 ? 2 : 1;
      const name = `layer${stage + 1}.${i}`;
      layers.push(spec.block === "basic" ? basicBlock(name, channels, planes, stride) : bottleneck(name, channels, planes, stride));
      channels = planes * expansion;
    }
  });
  layers.push({ type: "adaptiveavgpool", name: "avgpool", size: 1 }, { type: "flatten", name: "flatten" }, { type: "linear", name: "fc", out: classes });
  return { channels: 3, imageSize: 224, classes, layers };
}

/** torchvision.models.vgg16: configuration "D" of Simonyan & Zisserman 2015 (Table 1), no batch norm. */
export function vgg16(classes = 1000): CnnNetwork {
  const config: (number | "M")[] = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"];
  const layers: CnnLayer[] = [];
  config.forEach((item) => {
    const index = layers.length;
    if (item === "M") {
      layers.push({ type: "maxpool", name: `features.${index}`, kernel: 2, stride: 2 });
    } else {
      layers.push(conv(`features.${index}`, item, 3, 1, 1, true), relu(`features.${index + 1}`));
    }
  });
  layers.push(
    { type: "adaptiveavgpool", name: "avgpool", size: 7 },
    { type: "flatten", name: "flatten" },
    { type: "linear", name: "classifier.0", out: 4096 },
    relu("classifier.1"),
    { type: "dropout", name: "classifier.2", p: 0.5 },
    { type: "linear", name: "classifier.3", out: 4096 },
    relu("classifier.4"),
    { type: "dropout", name: "classifier.5", p: 0.5 },
    { type: "linear", name: "classifier.6", out: classes },
  );
  return { channels: 3, imageSize: 224, classes, layers };
}
