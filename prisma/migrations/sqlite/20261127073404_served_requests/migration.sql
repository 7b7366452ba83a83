-- CreateTable
CREATE TABLE "ServedRequest" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "deploymentId" TEXT NOT NULL,
    "role" TEXT NOT NULL DEFAULT 'primary',
    "status" INTEGER NOT NULL,
    "latencyMs" INTEGER NOT NULL,
    "promptTokens" INTEGER NOT NULL DEFAULT 0,
    "completionTokens" INTEGER NOT NULL DEFAULT 0,
    "createdAt" BIGINT NOT NULL
);

-- CreateIndex
CREATE INDEX "ServedRequest_endpointId_createdAt_idx" ON "ServedRequest"("endpointId", "createdAt");

-- CreateIndex
CREATE INDEX "ServedRequest_deploymentId_createdAt_idx" ON "ServedRequest"("deploymentId", "createdAt");
