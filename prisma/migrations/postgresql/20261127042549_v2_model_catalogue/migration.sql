-- AlterTable
ALTER TABLE "Model" ADD COLUMN     "visibility" TEXT;

-- CreateTable
CREATE TABLE "ModelRevision" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "uploadId" TEXT NOT NULL,
    "files" TEXT NOT NULL,
    "totalSizeBytes" BIGINT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "ModelRevision_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RemoteUpload" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "remoteUrl" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "statusMessage" TEXT NOT NULL DEFAULT '',
    "restartCount" INTEGER NOT NULL DEFAULT 0,
    "maxRestarts" INTEGER NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "RemoteUpload_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RemoteUploadEvent" (
    "id" TEXT NOT NULL,
    "uploadId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "level" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "RemoteUploadEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ModelRevision_modelId_idx" ON "ModelRevision"("modelId");

-- CreateIndex
CREATE INDEX "RemoteUpload_projectId_idx" ON "RemoteUpload"("projectId");

-- CreateIndex
CREATE INDEX "RemoteUpload_modelId_idx" ON "RemoteUpload"("modelId");

-- CreateIndex
CREATE INDEX "RemoteUploadEvent_uploadId_idx" ON "RemoteUploadEvent"("uploadId");
