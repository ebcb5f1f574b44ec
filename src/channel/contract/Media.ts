/**
 * What an adapter may use of the service's media handling, offered through
 * the adapter contract so an adapter depends on nothing else of the core:
 * probing a file with ffprobe (the sandbox checks what it rendered) and the
 * image sizes and formats of the image capability table.
 */
export { type ImageFormat, parseSize } from "../../catalog/contract/ImageCapabilities.ts"
export { DEFAULT_PROBE_FORMATS, ffprobeArgs, mediaInfoFromFfprobe } from "../../media/Ffprobe.ts"
export { type MediaInfo, ProbeError } from "../../media/MediaInfo.ts"
